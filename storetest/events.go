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
	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/webhook"
)

// withStatus is an import document with another order status.
func withStatus(doc, status string) string {
	return strings.Replace(doc, `"status":"issued","product"`, `"status":"`+status+`","product"`, 1)
}

// outbox fans out the events pending and returns them, "member type data"
// each, in their order; their time must be within the test's.
func outbox(t *testing.T, s storekit.Store, since time.Time) []string {
	t.Helper()
	var got []string
	n, err := s.FanOut(context.Background(), 10000, func(ev certorder.Event, ep certorder.Endpoint) (queue.Job, error) {
		if ev.At.Before(since.Add(-time.Second)) || ev.At.After(time.Now().Add(time.Second)) {
			t.Errorf("event %s %s at %v, not within the test", ev.Type, ev.Data, ev.At)
		}
		got = append(got, fmt.Sprintf("%d %s %s", ev.MemberID, ev.Type, ev.Data))
		return webhook.NewDelivery(ep, ev.Type, fmt.Sprintf("msg_%d", ev.ID), []byte("{}")), nil
	})
	must(t, err)
	if n != len(got) {
		t.Fatalf("%d events fanned out, %d to an endpoint: every member here has one", n, len(got))
	}
	return got
}

// The events of a change to an order are written, exactly once, by the
// path that makes it, in its transaction: the import (a status changed or
// a renewal recorded, in any batch), RecordRenewal, the sync; never by a
// new order, a change refused or rolled back, a dry run, or a restore.
// Their data are the same bytes on every store.
func testOrderEvents(t *testing.T, open func(t *testing.T) storekit.Store) {
	ctx := context.Background()
	start := time.Now()
	s := open(t)
	defer s.Close()
	var alice, bob int64
	for _, m := range []struct {
		name string
		id   *int64
	}{{"alice", &alice}, {"bob", &bob}} {
		added, err := s.AddMember(ctx, m.name)
		must(t, err)
		*m.id = added.ID
		_, err = s.AddEndpoint(ctx, m.name, certorder.Endpoint{URL: "https://" + m.name + ".example/hook", Secret: "whsec_x"})
		must(t, err)
	}
	check := func(what string, want ...string) {
		t.Helper()
		if got := outbox(t, s, start); !slices.Equal(got, want) {
			t.Fatalf("%s: events\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	renewed := func(member, id, by int64) string {
		return fmt.Sprintf(`%d order.renewed {"order_id":%d,"renewed_order_id":%d}`, member, id, by)
	}
	status := func(member, id int64, now, was string) string {
		return fmt.Sprintf(`%d order.status_changed {"order_id":%d,"status":%q,"previous_status":%q}`, member, id, now, was)
	}

	_, err := s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 0, "2030-01-01"), OrderJSON(2, 0, "2030-01-01"),
		OrderJSON(3, 0, "2030-01-01"), withStatus(OrderJSON(4, 5, "2030-01-01"), "revoked")))
	must(t, err)
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(9, 0, "2030-01-01")))
	must(t, err)
	check("new orders, one of them renewed")

	// The import: a renewal and a change of status of one order, renewal
	// first, in its first batch; a change of status in its second.
	many := []string{withStatus(OrderJSON(1, 2, "2030-01-01"), "revoked")}
	for id := int64(100); len(many) < storekit.ImportBatchSize; id++ {
		many = append(many, OrderJSON(id, 0, "2030-01-01"))
	}
	many = append(many, withStatus(OrderJSON(3, 0, "2030-01-01"), "expired"))
	_, err = s.ImportOrders(ctx, "alice", Orders(t, many...))
	must(t, err)
	check("an import", renewed(alice, 1, 2), status(alice, 1, "revoked", "issued"), status(alice, 3, "expired", "issued"))
	_, err = s.ImportOrders(ctx, "alice", Orders(t, withStatus(OrderJSON(1, 0, "2030-01-01"), "revoked")))
	must(t, err)
	check("the same order again, its renewal kept")

	// An import refused in its second batch writes no event of its first.
	many[0] = withStatus(OrderJSON(2, 0, "2030-01-01"), "revoked")
	many[len(many)-1] = OrderJSON(9, 0, "2030-01-01") // bob's
	_, err = s.ImportOrders(ctx, "alice", Orders(t, many...))
	wantErr(t, err, certorder.ErrConflict)
	check("an import refused")

	// RecordRenewal: once; a refused one is no event.
	must(t, s.RecordRenewal(ctx, 2, 3))
	must(t, s.RecordRenewal(ctx, 2, 3))
	wantErr(t, s.RecordRenewal(ctx, 3, 2), certorder.ErrConflict)
	check("order renew", renewed(alice, 2, 3))

	// The sync: the events of the stored orders it changes, to their
	// owner; none for an order it adds.
	must(t, s.LinkContainer(ctx, "bob", 200))
	_, err = ccsync.ApplyBatch(ctx, s, []storekit.UpstreamOrder{upstream(t, 9, 10, 200, "revoked"), upstream(t, 10, 0, 200, "pending")})
	must(t, err)
	check("a sync", renewed(bob, 9, 10), status(bob, 9, "revoked", "issued"))

	// A dry run and a batch rolled back write none.
	dry := ccsync.NewDryRun(s)
	res, err := ccsync.ApplyBatch(ctx, dry, []storekit.UpstreamOrder{upstream(t, 10, 0, 200, "issued")})
	must(t, err)
	if changeList(res) != "10:pending->issued" {
		t.Fatalf("the dry run: %+v", res)
	}
	_, err = ccsync.ApplyBatch(ctx, s, []storekit.UpstreamOrder{upstream(t, 10, 0, 200, "issued"),
		upstream(t, 11, 0, 200, "issued"), upstream(t, 11, 0, 200, "issued")})
	wantErr(t, err, certorder.ErrInvalid)
	check("a dry run, a batch refused")
	if o, err := s.FindOrder(ctx, 10); err != nil || o.Status != "pending" {
		t.Fatalf("order 10 after a dry run and a refused batch: %+v %v", o, err)
	}

	// A restore inserts orders, renewals and statuses: no event.
	var dump bytes.Buffer
	must(t, export.Write(ctx, s, &dump))
	dst := open(t)
	defer dst.Close()
	must(t, dst.Restore(ctx, export.Read(&dump)))
	for _, name := range []string{"alice", "bob"} {
		_, err = dst.AddEndpoint(ctx, name, certorder.Endpoint{URL: "https://" + name + ".example/hook", Secret: "whsec_x"})
		must(t, err)
	}
	if got := outbox(t, dst, start); len(got) != 0 {
		t.Fatalf("a restore made events: %v", got)
	}
}
