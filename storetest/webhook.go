package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/webhook"
)

// fanOut fans out what is pending and returns, per endpoint, the deliveries
// queued: "type data" of each.
func fanOut(t *testing.T, s storekit.Store) map[int64][]string {
	t.Helper()
	got := map[int64][]string{}
	n := 0
	_, err := s.FanOut(context.Background(), 100, func(ev certorder.Event, ep certorder.Endpoint) (queue.Job, error) {
		n++
		format := ev.Type
		if ep.Format != certorder.FormatStandard { // the endpoint's format, named
			format = ep.Format + ":" + ev.Type
		}
		if ep.MemberID != ev.MemberID {
			t.Errorf("event of member %d fanned out to endpoint %d of member %d", ev.MemberID, ep.ID, ep.MemberID)
		}
		return webhook.NewDelivery(ep, ev.Type, fmt.Sprintf("msg_%d_%d", ev.ID, n), []byte(format+" "+string(ev.Data))), nil
	})
	must(t, err)
	for _, d := range claimDeliveries(t, s, time.Now().Add(time.Second), 100) {
		got[d.EndpointID] = append(got[d.EndpointID], string(d.Body))
	}
	return got
}

// claimDeliveries claims up to limit deliveries due at at, for a minute.
func claimDeliveries(t *testing.T, s storekit.Store, at time.Time, limit int) []webhook.Delivery {
	t.Helper()
	jobs, err := s.ClaimJobs(context.Background(), queue.Claim{Kinds: []string{queue.KindWebhook}, Owner: "storetest",
		At: at, Lease: time.Minute, Limit: limit})
	must(t, err)
	return deliveries(t, jobs)
}

// memberDeliveries lists the latest deliveries of the member's endpoint.
func memberDeliveries(t *testing.T, s storekit.Store, memberID, endpointID int64) []webhook.Delivery {
	t.Helper()
	jobs, err := s.Jobs(context.Background(), queue.List{Kind: queue.KindWebhook, MemberID: memberID, SubjectID: endpointID, Limit: 10})
	must(t, err)
	return deliveries(t, jobs)
}

func deliveries(t *testing.T, jobs []queue.Job) []webhook.Delivery {
	t.Helper()
	ds := make([]webhook.Delivery, len(jobs))
	for i, j := range jobs {
		var err error
		ds[i], err = webhook.DeliveryOf(j)
		must(t, err)
	}
	return ds
}

// finish records an attempt at a delivery claimed by storetest.
func finish(t *testing.T, s storekit.Store, o queue.Outcome) {
	t.Helper()
	o.Owner = "storetest"
	must(t, s.FinishJob(context.Background(), o))
}

// The outbox: renewals and status changes recorded by import and renew
// become events, in the same transaction, for the order's member only;
// restore emits nothing; deliveries are claimed once, leased, finished.
func testWebhooks(t *testing.T, open func(t *testing.T) storekit.Store) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	for _, name := range []string{"alice", "bob"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	all, err := s.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://a.example/hook", Secret: "whsec_a"})
	must(t, err)
	renewals, err := s.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://a.example/renewals", Secret: "whsec_b",
		EventTypes: []string{"order.renewed"}, Format: certorder.FormatSlack})
	must(t, err)
	bobs, err := s.AddEndpoint(ctx, "bob", certorder.Endpoint{URL: "https://b.example/hook", Secret: "whsec_c"})
	must(t, err)
	if all.ID == 0 || all.MemberID == 0 || !all.Enabled || all.CreatedAt.IsZero() {
		t.Fatalf("AddEndpoint = %+v", all)
	}
	_, err = s.AddEndpoint(ctx, "nobody", certorder.Endpoint{URL: "https://x", Secret: "whsec_x"})
	wantErr(t, err, certorder.ErrNotFound)
	eps, err := s.Endpoints(ctx, "alice")
	must(t, err)
	if len(eps) != 2 || eps[1].URL != "https://a.example/renewals" || !slices.Equal(eps[1].EventTypes, []string{"order.renewed"}) ||
		eps[1].Format != certorder.FormatSlack || eps[0].Format != certorder.FormatStandard || eps[0].Secret != "whsec_a" || eps[0].Member != "alice" {
		t.Fatalf("Endpoints = %+v", eps)
	}

	// New orders are no event; a status change and a renewal are.
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 0, "2030-01-01"), OrderJSON(2, 0, "2031-01-01")))
	must(t, err)
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(9, 0, "2030-01-01")))
	must(t, err)
	if got := fanOut(t, s); len(got) != 0 {
		t.Fatalf("new orders made events: %v", got)
	}
	must(t, s.RecordRenewal(ctx, 1, 2))
	revoked := strings.Replace(OrderJSON(2, 0, "2031-01-01"), `"status":"issued","product"`, `"status":"revoked","product"`, 1)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, revoked))
	must(t, err)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, revoked)) // the same again: no change, no event
	must(t, err)
	got := fanOut(t, s)
	wantAll := []string{`order.renewed {"order_id":1,"renewed_order_id":2}`,
		`order.status_changed {"order_id":2,"status":"revoked","previous_status":"issued"}`}
	if !equalJSONLines(got[all.ID], wantAll) || !equalJSONLines(got[renewals.ID], []string{"slack:" + wantAll[0]}) || len(got[bobs.ID]) != 0 {
		t.Fatalf("deliveries: %v", got)
	}
	if again := fanOut(t, s); len(again) != 0 {
		t.Fatalf("fanned out twice, or claimed within the lease: %v", again)
	}

	// A finished attempt; a retry due later; the endpoint's failure state.
	ds := memberDeliveries(t, s, all.MemberID, all.ID)
	if len(ds) != 2 || ds[0].State != webhook.StatePending || ds[0].MsgID == "" {
		t.Fatalf("Deliveries = %+v", ds)
	}
	at := time.Now().UTC().Truncate(time.Microsecond)
	busy, _ := json.Marshal(map[string]any{"status": 503, "class": "http_status", "latency_us": 1500})
	finish(t, s, queue.Outcome{JobID: ds[0].ID, At: at, Error: "busy", State: queue.Pending, RunAfter: at.Add(time.Hour), Result: busy})
	finish(t, s, queue.Outcome{JobID: ds[1].ID, At: at, State: queue.Done, Result: []byte(`{"status":200,"class":"delivered"}`)})
	must(t, s.RecordEndpointAttempt(ctx, all.ID, at, true, ""))
	ds = memberDeliveries(t, s, all.MemberID, all.ID)
	if ds[0].Attempts != 1 || ds[0].LastStatus != 503 || ds[0].LastLatency != 1500*time.Microsecond || ds[0].LastError != "busy" ||
		!ds[0].NextAttempt.Equal(at.Add(time.Hour)) || ds[1].State != webhook.StateDelivered || !ds[1].LastAttempt.Equal(at) {
		t.Fatalf("after the attempts: %+v", ds)
	}
	ep, err := s.FindEndpoint(ctx, all.ID)
	must(t, err)
	if !ep.LastSuccess.Equal(at) || !ep.FailingSince.IsZero() {
		t.Fatalf("endpoint after a success: %+v", ep)
	}
	rd := memberDeliveries(t, s, renewals.MemberID, renewals.ID)
	finish(t, s, queue.Outcome{JobID: rd[0].ID, At: at, State: queue.Done})
	if due := claimDeliveries(t, s, at.Add(30*time.Minute), 10); len(due) != 0 {
		t.Fatalf("claimed before it was due: %v", due)
	}
	wantErr(t, s.RetryJob(ctx, queue.KindWebhook, all.MemberID, all.ID, ds[0].ID), certorder.ErrConflict)  // pending still
	wantErr(t, s.RetryJob(ctx, queue.KindWebhook, bobs.MemberID, all.ID, ds[1].ID), certorder.ErrNotFound) // not bob's
	must(t, s.RetryJob(ctx, queue.KindWebhook, all.MemberID, all.ID, ds[1].ID))
	due := claimDeliveries(t, s, time.Now().Add(time.Second), 10)
	if len(due) != 1 || due[0].MsgID != ds[1].MsgID || due[0].EndpointID != all.ID || due[0].MemberID != all.MemberID ||
		due[0].Attempts != 0 {
		t.Fatalf("redelivered: %+v", due)
	}
	finish(t, s, queue.Outcome{JobID: due[0].ID, At: at, State: queue.Failed})
	must(t, s.RecordEndpointAttempt(ctx, all.ID, at, false, "the endpoint answered 410 Gone"))
	ep, err = s.FindEndpoint(ctx, all.ID)
	must(t, err)
	if ep.Enabled || ep.DisabledReason != "the endpoint answered 410 Gone" {
		t.Fatalf("endpoint after 410: %+v", ep)
	}
	// A disabled endpoint gets nothing new.
	wantErr(t, s.RecordRenewal(ctx, 2, 1), certorder.ErrConflict) // a refused change is no event
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(2, 0, "2031-01-01")))
	must(t, err)
	if got := fanOut(t, s); len(got[all.ID]) != 0 || len(got[renewals.ID]) != 0 {
		t.Fatalf("deliveries to a disabled endpoint or of an unwanted type: %v", got)
	}
	must(t, s.SetMemberEndpointEnabled(ctx, all.MemberID, all.ID, true, ""))
	must(t, s.RotateSecret(ctx, all.ID, "whsec_new", at.Add(24*time.Hour)))
	ep, err = s.FindEndpoint(ctx, all.ID)
	must(t, err)
	if !ep.Enabled || ep.DisabledReason != "" || ep.Secret != "whsec_new" || ep.PreviousSecret != "whsec_a" ||
		!ep.PreviousExpires.Equal(at.Add(24*time.Hour)) {
		t.Fatalf("after enable and rotate: %+v", ep)
	}
	ids, err := s.Enqueue(ctx, webhook.NewDelivery(bobs, "webhook.test", "msg_test", []byte(`{"type":"webhook.test"}`)))
	must(t, err)
	if ds := memberDeliveries(t, s, bobs.MemberID, bobs.ID); len(ds) != 1 || ds[0].ID != ids[0] || ds[0].EventType != "webhook.test" {
		t.Fatalf("test delivery: %+v", ds)
	}
	must(t, s.DeleteEndpoint(ctx, bobs.ID))
	_, err = s.FindEndpoint(ctx, bobs.ID)
	wantErr(t, err, certorder.ErrNotFound)
	if ds := memberDeliveries(t, s, bobs.MemberID, bobs.ID); len(ds) != 0 {
		t.Fatalf("a deleted endpoint's deliveries stay: %+v", ds)
	}

	// order.expiring: orders of members with an endpoint wanting it, in
	// the window, renewed or not (with how far the renewal has come: the
	// worker decides); once per threshold.
	exp, err := s.EndingOrders(ctx, certorder.EventOrderExpiring, "2029-12-01", "2030-01-31")
	must(t, err)
	if len(exp) != 1 || exp[0].ID != 1 || exp[0].Renewal != certorder.RenewalIssued { // 9 is bob's, who has no endpoint now
		t.Fatalf("EndingOrders = %+v", exp)
	}
	exp, err = s.EndingOrders(ctx, certorder.EventOrderExpiring, "2030-12-01", "2031-01-31")
	must(t, err)
	if len(exp) != 1 || exp[0].ID != 2 || exp[0].Certificate.ValidTill != "2031-01-01" || len(exp[0].Notified) != 0 {
		t.Fatalf("ExpiringOrders = %+v", exp)
	}
	data := []byte(`{"order_id":2,"valid_till":"2031-01-01","days_remaining":7}`)
	ok, err := s.RecordEnding(ctx, certorder.EventOrderExpiring, exp[0], []int{7, 30}, data, at)
	must(t, err)
	again, err := s.RecordEnding(ctx, certorder.EventOrderExpiring, exp[0], []int{30}, data, at)
	must(t, err)
	exp, err = s.EndingOrders(ctx, certorder.EventOrderExpiring, "2030-12-01", "2031-01-31")
	must(t, err)
	if !ok || again || !slices.Equal(sorted(exp[0].Notified), []int{7, 30}) {
		t.Fatalf("RecordExpiring %v %v, notified %v", ok, again, exp[0].Notified)
	}
	if got := fanOut(t, s); !equalJSONLines(got[all.ID], []string{"order.expiring " + string(data)}) {
		t.Fatalf("expiring deliveries: %v", got)
	}
	// The CertCentral sync's writes emit the same events.
	must(t, s.LinkContainer(ctx, "alice", 100))
	_, err = ccsync.ApplyBatch(ctx, s, []storekit.UpstreamOrder{upstream(t, 50, 0, 100, "issued")})
	must(t, err)
	_, err = ccsync.ApplyBatch(ctx, s, []storekit.UpstreamOrder{upstream(t, 51, 0, 100, "issued"), upstream(t, 50, 51, 100, "issued")})
	must(t, err)
	if got := fanOut(t, s); !equalJSONLines(got[all.ID], []string{`order.renewed {"order_id":50,"renewed_order_id":51}`}) {
		t.Fatalf("the sync's renewal: %v", got)
	}
	must(t, s.PruneJobs(ctx, []string{queue.KindWebhook}, time.Now().Add(time.Hour)))
	must(t, s.PruneEvents(ctx, time.Now().Add(time.Hour)))

	// A restore inserts orders with their renewals: no event.
	var dump bytes.Buffer
	must(t, export.Write(ctx, s, &dump))
	dst := open(t)
	defer dst.Close()
	must(t, dst.Restore(ctx, export.Read(&dump)))
	_, err = dst.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://a.example/hook", Secret: "whsec_a"})
	must(t, err)
	if got := fanOut(t, dst); len(got) != 0 {
		t.Fatalf("a restore made events: %v", got)
	}
}

func sorted(xs []int) []int { xs = slices.Clone(xs); slices.Sort(xs); return xs }

// equalJSONLines compares "type {json}" lines, the JSON by value.
func equalJSONLines(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	norm := func(s string) string {
		typ, data, _ := strings.Cut(s, " ")
		var v any
		if json.Unmarshal([]byte(data), &v) != nil {
			return s
		}
		b, _ := json.Marshal(v)
		return typ + " " + string(b)
	}
	for i := range got {
		if norm(got[i]) != norm(want[i]) {
			return false
		}
	}
	return true
}

// A round-robin claim takes one delivery per member, the members not in
// Claim.Served first (by their oldest due delivery), then those listed, in
// the list's order, however old their deliveries.
func testWebhookClaimOrder(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	ids := map[int64]string{} // endpoint -> member
	var members []int64
	for _, name := range []string{"first", "second", "third"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
		ep, err := s.AddEndpoint(ctx, name, certorder.Endpoint{URL: "https://" + name + ".example/hook", Secret: "whsec_" + name})
		must(t, err)
		ids[ep.ID], members = name, append(members, ep.MemberID)
		for i := range 2 { // queued in this order: first's, second's, third's
			_, err := s.Enqueue(ctx, webhook.NewDelivery(ep, "webhook.test", fmt.Sprintf("msg_%s_%d", name, i), []byte(`{}`)))
			must(t, err)
		}
	}
	claim := func(served ...int64) string {
		t.Helper()
		jobs, err := s.ClaimJobs(ctx, queue.Claim{Kinds: []string{queue.KindWebhook}, Owner: "storetest",
			At: time.Now().Add(time.Second), Lease: time.Minute, Limit: 1, RoundRobin: true, Served: served})
		must(t, err)
		if len(jobs) != 1 {
			t.Fatalf("claimed %d", len(jobs))
		}
		return ids[jobs[0].SubjectID]
	}
	var got []string
	got = append(got, claim()) // the oldest due first
	got = append(got, claim(members[0], members[1]))
	got = append(got, claim(members[1], members[2], members[0]))
	got = append(got, claim(members[2], members[0], members[1]))
	if want := []string{"first", "third", "second", "third"}; !slices.Equal(got, want) {
		t.Fatalf("claimed from %v, want %v", got, want)
	}
}
