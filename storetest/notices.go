package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/mailer"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/queue"
)

// Notice addresses: at most max a member, one address once; the member's
// calls reach the member's own only; a confirmation works once; an
// unsubscribe sticks. Export and restore keep them, and the endpoints'
// formats.
func testNoticeAddresses(t *testing.T, open func(t *testing.T) storekit.Store) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	alice, err := s.AddMember(ctx, "alice")
	must(t, err)
	bob, err := s.AddMember(ctx, "bob")
	must(t, err)
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

	// The operator's (confirmed) and the member's (to confirm, its
	// confirmation queued with it).
	ops, err := s.AddNoticeAddress(ctx, alice.ID, certorder.NoticeAddress{Address: "ops@a.example", Lang: "ja",
		EventTypes: []string{"order.renewed", "order.plan_ending"}, Secret: noticeSecret, CreatedAt: at, ConfirmedAt: at}, 3)
	must(t, err)
	web, err := s.AddNoticeAddress(ctx, alice.ID, certorder.NoticeAddress{Address: "web@a.example", Lang: "en", Secret: noticeSecret, CreatedAt: at}, 3)
	must(t, err)
	_, err = s.AddNoticeAddress(ctx, alice.ID, certorder.NoticeAddress{Address: "ops@a.example", Lang: "en", Secret: "x"}, 3)
	wantErr(t, err, certorder.ErrConflict)
	_, err = s.AddNoticeAddress(ctx, alice.ID, certorder.NoticeAddress{Address: "third@a.example", Lang: "en", Secret: noticeSecret, ConfirmedAt: at}, 3)
	must(t, err)
	_, err = s.AddNoticeAddress(ctx, alice.ID, certorder.NoticeAddress{Address: "fourth@a.example", Lang: "en", Secret: "x"}, 3)
	wantErr(t, err, certorder.ErrLimit)
	_, err = s.AddNoticeAddress(ctx, 1<<40, certorder.NoticeAddress{Address: "x@a.example", Lang: "en", Secret: "x"}, 3)
	wantErr(t, err, certorder.ErrNotFound)
	theirs, err := s.AddNoticeAddress(ctx, bob.ID, certorder.NoticeAddress{Address: "ops@a.example", Lang: "en", Secret: noticeSecret, ConfirmedAt: at}, 3)
	must(t, err) // another member may name the same address

	as, err := s.NoticeAddresses(ctx, alice.ID)
	must(t, err)
	if len(as) != 3 || as[0].ID != ops.ID || as[0].Member != "alice" || as[0].Lang != "ja" || as[0].Secret != noticeSecret ||
		!slices.Equal(as[0].EventTypes, []string{"order.renewed", "order.plan_ending"}) || !as[0].ConfirmedAt.Equal(at) ||
		!as[0].CreatedAt.Equal(at) || !as[0].Active() || as[1].Active() || len(as[1].EventTypes) != 0 {
		t.Fatalf("NoticeAddresses = %+v", as)
	}

	// The confirmation is queued with the member's address, and sent
	// although the address is not active yet.
	ns, err := s.ClaimJobs(ctx, queue.Claim{Kinds: queue.NoticeKinds, Owner: "storetest", At: at, Lease: time.Minute, Limit: 10})
	must(t, err)
	if len(ns) != 1 || ns[0].Kind != queue.KindNoticeConfirm || ns[0].SubjectID != web.ID || ns[0].MemberID != alice.ID ||
		!ns[0].CreatedAt.Equal(at) || ns[0].State != queue.Running || ns[0].Owner != "storetest" {
		t.Fatalf("ClaimJobs = %+v", ns)
	}
	if evs, n, err := s.NoticeEvents(ctx, ns[0].ID, 100); err != nil || len(evs) != 0 || n != 0 {
		t.Fatalf("a confirmation's events: %v %v", evs, err)
	}

	// The member's calls: its own address only.
	for _, id := range []int64{theirs.ID, 1 << 40} {
		_, err := s.MemberNoticeAddress(ctx, alice.ID, id)
		wantErr(t, err, certorder.ErrNotFound)
		wantErr(t, s.SetMemberNoticeAddress(ctx, alice.ID, id, "en", nil), certorder.ErrNotFound)
		wantErr(t, s.DeleteMemberNoticeAddress(ctx, alice.ID, id), certorder.ErrNotFound)
	}
	must(t, s.SetMemberNoticeAddress(ctx, alice.ID, web.ID, "ja", []string{"order.expiring"}))
	got, err := s.MemberNoticeAddress(ctx, alice.ID, web.ID)
	must(t, err)
	if got.Lang != "ja" || !slices.Equal(got.EventTypes, []string{"order.expiring"}) {
		t.Fatalf("after SetMemberNoticeAddress: %+v", got)
	}

	// Confirming: once.
	must(t, s.ConfirmNoticeAddress(ctx, web.ID, at.Add(time.Hour)))
	wantErr(t, s.ConfirmNoticeAddress(ctx, web.ID, at.Add(2*time.Hour)), certorder.ErrConflict)
	wantErr(t, s.ConfirmNoticeAddress(ctx, 1<<40, at), certorder.ErrNotFound)
	got, err = s.FindNoticeAddress(ctx, web.ID)
	must(t, err)
	if !got.ConfirmedAt.Equal(at.Add(time.Hour)) || !got.Active() {
		t.Fatalf("confirmed: %+v", got)
	}
	// Unsubscribing: twice is the first time.
	must(t, s.UnsubscribeNoticeAddress(ctx, web.ID, at.Add(3*time.Hour)))
	must(t, s.UnsubscribeNoticeAddress(ctx, web.ID, at.Add(4*time.Hour)))
	wantErr(t, s.UnsubscribeNoticeAddress(ctx, 1<<40, at), certorder.ErrNotFound)
	if got, err = s.FindNoticeAddress(ctx, web.ID); err != nil || !got.UnsubscribedAt.Equal(at.Add(3*time.Hour)) || got.Active() {
		t.Fatalf("unsubscribed: %+v %v", got, err)
	}

	// Export and restore: the addresses and the endpoints' formats.
	_, err = s.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://hooks.slack.example/x", Secret: "whsec_a", Format: certorder.FormatSlack})
	must(t, err)
	var dump bytes.Buffer
	must(t, export.Write(ctx, s, &dump))
	dst := open(t)
	defer dst.Close()
	must(t, dst.Restore(ctx, export.Read(&dump)))
	m, err := dst.FindMember(ctx, "alice")
	must(t, err)
	restored, err := dst.NoticeAddresses(ctx, m.ID)
	must(t, err)
	as, err = s.NoticeAddresses(ctx, alice.ID)
	must(t, err)
	if len(restored) != len(as) {
		t.Fatalf("restored %d addresses of %d", len(restored), len(as))
	}
	for i := range as {
		w, g := as[i], restored[i]
		if g.Address != w.Address || g.Lang != w.Lang || g.Secret != w.Secret || !slices.Equal(g.EventTypes, w.EventTypes) ||
			!g.CreatedAt.Equal(w.CreatedAt) || !g.ConfirmedAt.Equal(w.ConfirmedAt) || !g.UnsubscribedAt.Equal(w.UnsubscribedAt) {
			t.Errorf("restored %+v, want %+v", g, w)
		}
	}
	eps, err := dst.Endpoints(ctx, "alice")
	must(t, err)
	if len(eps) != 1 || eps[0].Format != certorder.FormatSlack {
		t.Fatalf("restored endpoints %+v", eps)
	}
	must(t, s.DeleteMemberNoticeAddress(ctx, alice.ID, web.ID))
	_, err = s.FindNoticeAddress(ctx, web.ID)
	wantErr(t, err, certorder.ErrNotFound)
}

// The notice outbox: an event is queued once, for the member's active
// addresses that want it; an address gets NoticeDailyEvents messages of
// one event a day and the rest in the day's digest, due as the day ends;
// events too old go to no one; a claim holds for its lease; an attempt's
// outcome is the address's too.
func testNoticeOutbox(t *testing.T, open func(t *testing.T) storekit.Store) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	alice, err := s.AddMember(ctx, "alice")
	must(t, err)
	bob, err := s.AddMember(ctx, "bob")
	must(t, err)
	at := time.Now().UTC().Truncate(time.Microsecond)
	add := func(member int64, address string, confirmed bool, types ...string) certorder.NoticeAddress {
		t.Helper()
		a := certorder.NoticeAddress{Address: address, Lang: "en", EventTypes: types, Secret: "x", CreatedAt: at.Add(-time.Hour)}
		if confirmed {
			a.ConfirmedAt = at.Add(-time.Hour)
		}
		a, err := s.AddNoticeAddress(ctx, member, a, certorder.MaxNoticeAddresses)
		must(t, err)
		return a
	}
	all := add(alice.ID, "all@a.example", true)
	renewals := add(alice.ID, "renewals@a.example", true, "order.renewed")
	add(alice.ID, "unconfirmed@a.example", false)
	gone := add(alice.ID, "gone@a.example", true)
	must(t, s.UnsubscribeNoticeAddress(ctx, gone.ID, at))
	add(bob.ID, "bob@b.example", true)
	claim := func(at time.Time) []claimedNotice {
		t.Helper()
		jobs, err := s.ClaimJobs(ctx, queue.Claim{Kinds: queue.NoticeKinds, Owner: "storetest", At: at, Lease: time.Minute, Limit: 100})
		must(t, err)
		ns := make([]claimedNotice, len(jobs))
		for i, j := range jobs {
			ns[i] = claimedNotice{Job: j, Kind: strings.TrimPrefix(j.Kind, "notice.")}
			ns[i].Events, _, err = s.NoticeEvents(ctx, j.ID, 100)
			must(t, err)
		}
		return ns
	}
	queueNotices := func(limit int, at time.Time, maxAge time.Duration) (taken, queued int, err error) {
		return s.QueueNotices(ctx, limit, at, mailer.Plan(at, maxAge))
	}
	// The unconfirmed address's confirmation, out of the way.
	if ns := claim(at); len(ns) != 1 || ns[0].Kind != notice.KindConfirm {
		t.Fatalf("confirmations: %+v", ns)
	}

	// Twelve status changes of alice's orders (so, 12 events) and a renewal.
	var docs []string
	for i := range 12 {
		docs = append(docs, OrderJSON(int64(100+i), 0, "2030-01-01"))
	}
	_, err = s.ImportOrders(ctx, "alice", Orders(t, docs...))
	must(t, err)
	for i := range docs {
		docs[i] = withStatus(docs[i], "revoked")
	}
	_, err = s.ImportOrders(ctx, "alice", Orders(t, docs...))
	must(t, err)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(200, 0, "2030-01-01"), OrderJSON(201, 0, "2030-01-01")))
	must(t, err)
	must(t, s.RecordRenewal(ctx, 200, 201))

	taken, queued, err := queueNotices(5, at, time.Hour)
	must(t, err)
	if taken != 5 || queued != 5 {
		t.Fatalf("QueueNotices(5) took %d, queued %d", taken, queued)
	}
	taken, queued, err = queueNotices(100, at, time.Hour)
	must(t, err)
	// 8 more status changes for "all"; the renewal for "all" and "renewals".
	if taken != 8 || queued != 9 {
		t.Fatalf("QueueNotices took %d, queued %d", taken, queued)
	}
	if taken, _, err := queueNotices(100, at, time.Hour); err != nil || taken != 0 {
		t.Fatalf("queued again: %d %v", taken, err)
	}

	// "all": 10 messages of one event now, the other 3 in the digest at
	// midnight; "renewals": its one.
	ns := claim(at)
	perAddress := map[int64][]claimedNotice{}
	for _, n := range ns {
		if n.Kind != notice.KindEvent || len(n.Events) != 1 || n.Events[0].MemberID != alice.ID || n.MemberID != alice.ID {
			t.Fatalf("due now: %+v", n)
		}
		perAddress[n.SubjectID] = append(perAddress[n.SubjectID], n)
	}
	if len(perAddress[all.ID]) != certorder.NoticeDailyEvents || len(perAddress[renewals.ID]) != 1 || len(ns) != 11 {
		t.Fatalf("due now: %d to all, %d to renewals, %d in all", len(perAddress[all.ID]), len(perAddress[renewals.ID]), len(ns))
	}
	if ev := perAddress[renewals.ID][0].Events[0]; ev.Type != certorder.EventOrderRenewed ||
		!equalJSONLines([]string{"x " + string(ev.Data)}, []string{`x {"order_id":200,"renewed_order_id":201}`}) {
		t.Fatalf("the renewal: %+v %s", ev, ev.Data)
	}
	if again := claim(at.Add(30 * time.Second)); len(again) != 0 {
		t.Fatalf("claimed within the lease: %+v", again)
	}
	y, mo, d := at.Date()
	midnight := time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
	// The leases ran out (the confirmation's too: never finished); the digest is not due.
	if early := claim(midnight.Add(-time.Second)); len(early) != 12 {
		t.Fatalf("before midnight: %d notices", len(early))
	}
	// An event of the same day queued after the digest was claimed (two
	// instances, a clock behind) makes a digest of its own, not one
	// attached to a message on its way.
	ns = claim(midnight.Add(time.Minute))
	var digest claimedNotice
	for _, n := range ns {
		if n.Kind == notice.KindDigest {
			digest = n
		}
	}
	var types []string
	for _, ev := range digest.Events {
		types = append(types, ev.Type)
	}
	if digest.SubjectID != all.ID || !slices.Equal(types, []string{"order.status_changed", "order.status_changed", "order.renewed"}) ||
		digest.CreatedAt.UTC().Format(certorder.DateLayout) != at.Format(certorder.DateLayout) {
		t.Fatalf("digest %+v: %v", digest, types)
	}
	// A digest is read up to a bound, with the count of all it tells.
	if first, n, err := s.NoticeEvents(ctx, digest.ID, 2); err != nil || len(first) != 2 || n != 3 || first[1].Type != "order.status_changed" {
		t.Fatalf("the digest's first 2 events: %v of %d, %v", first, n, err)
	}
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(100, 0, "2030-01-01"))) // revoked before: a status change
	must(t, err)
	if _, queued, err := queueNotices(100, at.Add(time.Second), time.Hour); err != nil || queued != 1 {
		t.Fatalf("a late event of the day: queued %d, %v", queued, err)
	}
	if late := claim(midnight.Add(time.Minute)); len(late) != 1 || late[0].Kind != notice.KindDigest || late[0].ID == digest.ID ||
		len(late[0].Events) != 1 {
		t.Fatalf("the late event: %+v", late)
	}

	// Outcomes: a permanent failure is the address's, a success clears it.
	finishNotice := func(o queue.Outcome) {
		t.Helper()
		o.Owner = "storetest"
		must(t, s.FinishJob(ctx, o))
	}
	n := perAddress[all.ID][0]
	finishNotice(queue.Outcome{JobID: n.ID, At: at, State: queue.Failed, Error: "550 5.1.1 no such mailbox"})
	must(t, s.RecordNoticeAttempt(ctx, all.ID, storekit.NoticeAttempt{At: at, Failure: "550 5.1.1 no such mailbox", FailureKind: "recipient"}))
	a, err := s.FindNoticeAddress(ctx, all.ID)
	must(t, err)
	if a.Failure != "550 5.1.1 no such mailbox" || a.FailureKind != "recipient" || !a.FailedAt.Equal(at) {
		t.Fatalf("after a permanent failure: %+v", a)
	}
	retry := perAddress[all.ID][1]
	finishNotice(queue.Outcome{JobID: retry.ID, At: at, State: queue.Pending, RunAfter: midnight.Add(time.Hour), Error: "451 try later"})
	must(t, s.RecordNoticeAttempt(ctx, all.ID, storekit.NoticeAttempt{At: at, Failure: "451 try later", FailureKind: "recipient",
		RetryAt: midnight.Add(time.Hour)}))
	if a, err := s.FindNoticeAddress(ctx, all.ID); err != nil || a.Failure == "" || a.RetryFailure != "451 try later" ||
		!a.RetryFailedAt.Equal(at) || !a.RetryAt.Equal(midnight.Add(time.Hour)) {
		t.Fatalf("a temporary failure cleared the permanent one, or is not recorded: %+v %v", a, err)
	}
	finishNotice(queue.Outcome{JobID: perAddress[all.ID][2].ID, At: at.Add(time.Second), State: queue.Done})
	must(t, s.RecordNoticeAttempt(ctx, all.ID, storekit.NoticeAttempt{At: at.Add(time.Second), Sent: true}))
	if a, err = s.FindNoticeAddress(ctx, all.ID); err != nil || a.Failure != "" || !a.FailedAt.IsZero() || !a.LastSent.Equal(at.Add(time.Second)) ||
		a.FailureKind != "" || a.RetryFailure != "" || !a.RetryAt.IsZero() {
		t.Fatalf("after a success: %+v %v", a, err)
	}
	later := claim(midnight.Add(time.Hour))
	if !slices.ContainsFunc(later, func(n claimedNotice) bool {
		return n.ID == retry.ID && n.Attempts == 1 && n.LastError == "451 try later"
	}) {
		t.Fatalf("the retry was not due again: %+v", later)
	}
	must(t, s.PruneJobs(ctx, queue.NoticeKinds, at.Add(time.Minute)))
	if later := claim(midnight.Add(2 * time.Hour)); !slices.ContainsFunc(later, func(n claimedNotice) bool { return n.ID == retry.ID }) {
		t.Fatalf("pruning took a pending notice")
	}

	// An event older than maxAge is taken and told to no one; an order
	// ending is listed for a member whose only subscriber is an address.
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(300, 0, "2030-01-01")))
	must(t, err)
	_, err = s.ImportOrders(ctx, "bob", Orders(t, withStatus(OrderJSON(300, 0, "2030-01-01"), "revoked")))
	must(t, err)
	if taken, queued, err := queueNotices(100, at.Add(2*time.Hour), time.Hour); err != nil || taken != 1 || queued != 0 {
		t.Fatalf("an old event: took %d, queued %d, %v", taken, queued, err)
	}
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(301, 0, "2030-01-20")))
	must(t, err)
	ending, err := s.EndingOrders(ctx, certorder.EventOrderExpiring, "2030-01-01", "2030-01-31")
	must(t, err)
	var ids []string
	for _, o := range ending {
		ids = append(ids, fmt.Sprint(o.ID))
	}
	// Alice's orders 200 and 201 end then too: her addresses want everything.
	if got := strings.Join(ids, ","); !strings.Contains(got, "301") || !strings.Contains(got, "200") {
		t.Fatalf("EndingOrders with addresses only: %s", got)
	}
}

// claimedNotice is a notice job as the store suite claims it, with its events.
type claimedNotice struct {
	queue.Job
	Kind   string // notice.KindEvent, NoticeDigest, NoticeConfirm
	Events []certorder.Event
}
