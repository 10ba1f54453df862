package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/internal/orderdoc"
	"github.com/certorder/certorder/internal/storekit"
)

// upstream makes an upstream order in the given division from OrderJSON,
// with the order status given.
func upstream(t *testing.T, id, renewedBy, container int64, status string) storekit.UpstreamOrder {
	t.Helper()
	doc := strings.Replace(OrderJSON(id, renewedBy, "2030-01-01"), `"status":"issued","product"`,
		`"status":"`+status+`","product"`, 1)
	o, err := orderdoc.Parse([]byte(doc))
	must(t, err)
	return storekit.UpstreamOrder{Order: o, Container: container}
}

// owners says who owns each order: a member's name, "unassigned", or "-".
func owners(t *testing.T, s storekit.Store, ids ...int64) string {
	t.Helper()
	ctx := context.Background()
	known, err := s.KnownOrders(ctx, ids)
	must(t, err)
	var out []string
	for _, id := range ids {
		k, ok := known[id]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%d:-", id))
		case k.MemberID == 0:
			out = append(out, fmt.Sprintf("%d:unassigned@%d", id, k.Container))
		default:
			o, err := s.FindOrder(ctx, id)
			must(t, err)
			out = append(out, fmt.Sprintf("%d:%s>%d", id, o.Member, o.RenewedBy))
		}
	}
	return strings.Join(out, " ")
}

func changeList(res storekit.SyncResult) string {
	var out []string
	for _, c := range res.Changes {
		kind := "changed"
		switch {
		case c.Adopted:
			kind = "adopted"
		case c.Added:
			kind = "added"
		case c.StatusChanged():
			kind = c.PreviousStatus + "->" + c.Status
		}
		if c.RenewalLinked() {
			kind += fmt.Sprintf(",renewed>%d", c.RenewedBy)
		}
		out = append(out, fmt.Sprintf("%d:%s", c.OrderID, kind))
	}
	return strings.Join(out, " ")
}

func testContainerLinks(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	wantErr(t, s.LinkContainer(ctx, "nobody", 100), certorder.ErrNotFound)
	wantErr(t, s.LinkContainer(ctx, "alice", 0), certorder.ErrInvalid)
	must(t, s.LinkContainer(ctx, "bob", 300))
	must(t, s.LinkContainer(ctx, "alice", 200))
	must(t, s.LinkContainer(ctx, "alice", 100))
	must(t, s.LinkContainer(ctx, "alice", 100)) // again: nothing changes
	wantErr(t, s.LinkContainer(ctx, "bob", 100), certorder.ErrConflict)
	links, err := s.ContainerLinks(ctx)
	must(t, err)
	var got []string
	for _, l := range links {
		if l.CreatedAt.IsZero() || l.MemberID == 0 {
			t.Errorf("link %+v", l)
		}
		got = append(got, fmt.Sprintf("%s:%d", l.Member, l.Container))
	}
	if want := []string{"alice:100", "alice:200", "bob:300"}; !slices.Equal(got, want) {
		t.Fatalf("ContainerLinks = %v, want %v", got, want)
	}
	wantErr(t, s.UnlinkContainer(ctx, "bob", 100), certorder.ErrNotFound)
	wantErr(t, s.UnlinkContainer(ctx, "nobody", 100), certorder.ErrNotFound)
	must(t, s.UnlinkContainer(ctx, "alice", 100))
	must(t, s.LinkContainer(ctx, "bob", 100))
	links, err = s.ContainerLinks(ctx)
	must(t, err)
	if len(links) != 3 || links[1].Member != "bob" || links[1].Container != 100 {
		t.Fatalf("after unlink and link: %+v", links)
	}
}

// ApplyUpstream: who owns what, idempotence, conflicts, adoption, dry runs.
func testApplyUpstream(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob", "carol"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	must(t, s.LinkContainer(ctx, "alice", 100))
	must(t, s.LinkContainer(ctx, "bob", 200))
	apply := func(dry *ccsync.DryRun, orders ...storekit.UpstreamOrder) storekit.SyncResult {
		t.Helper()
		var txs storekit.SyncTxRunner = s
		if dry != nil {
			txs = dry
		}
		res, err := ccsync.ApplyBatch(ctx, txs, orders)
		must(t, err)
		return res
	}
	// In the batch's order, not in order of number: 2 renews 1 from bob's
	// division, 6 renews the unassigned 5 from alice's.
	res := apply(nil,
		upstream(t, 6, 0, 100, "issued"), upstream(t, 2, 0, 200, "issued"), upstream(t, 1, 2, 100, "issued"),
		upstream(t, 3, 0, 300, "issued"), upstream(t, 4, 0, 200, "issued"), upstream(t, 5, 6, 300, "issued"))
	if got, want := changeList(res), "1:added,renewed>2 2:added 4:added 6:added"; got != want {
		t.Errorf("changes %s, want %s", got, want)
	}
	if len(res.Unassigned) != 2 || res.Unassigned[0] != (storekit.UpstreamRef{ID: 3, Container: 300}) || len(res.Conflicts) != 0 {
		t.Errorf("unassigned %v, conflicts %v", res.Unassigned, res.Conflicts)
	}
	if got, want := owners(t, s, 1, 2, 3, 4, 5, 6, 7), "1:alice>2 2:alice>0 3:unassigned@300 4:bob>0 5:unassigned@300 6:alice>0 7:-"; got != want {
		t.Fatalf("owners %s, want %s", got, want)
	}
	// Unassigned orders are nobody's.
	for _, name := range []string{"alice", "bob", "carol"} {
		m, err := s.FindMember(ctx, name)
		must(t, err)
		for _, id := range orderIDs(t, s, certorder.OrderQuery{MemberID: m.ID}) {
			if id == 3 || id == 5 {
				t.Errorf("%s lists unassigned order %d", name, id)
			}
		}
	}
	_, err := s.FindOrder(ctx, 3)
	wantErr(t, err, certorder.ErrNotFound)

	// The same again changes nothing.
	res = apply(nil, upstream(t, 1, 2, 100, "issued"), upstream(t, 2, 0, 200, "issued"), upstream(t, 3, 0, 300, "issued"))
	if len(res.Changes) != 0 || res.Unchanged != 3 || len(res.Unassigned) != 1 {
		t.Fatalf("a second apply: %+v", res)
	}

	// A status change; an order imported by hand for bob in alice's division
	// stays bob's, reported; a renewal across members is not recorded, the
	// rest of the order is.
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(7, 0, "2030-01-01")))
	must(t, err)
	res = apply(nil, upstream(t, 4, 6, 200, "revoked"), upstream(t, 7, 0, 100, "issued"), upstream(t, 2, 0, 200, "issued"))
	if got, want := changeList(res), "4:issued->revoked"; got != want {
		t.Errorf("changes %s, want %s", got, want)
	}
	var conflicts []int64
	for _, c := range res.Conflicts {
		conflicts = append(conflicts, c.OrderID)
		if c.Reason == "" || c.MemberID == 0 {
			t.Errorf("conflict %+v", c)
		}
	}
	if !slices.Equal(conflicts, []int64{4, 7}) {
		t.Errorf("conflicts %+v, want orders 4 and 7", res.Conflicts)
	}
	if got, want := owners(t, s, 2, 4, 7), "2:alice>0 4:bob>0 7:bob>0"; got != want {
		t.Fatalf("owners %s, want %s", got, want)
	}
	if o, err := s.FindOrder(ctx, 4); err != nil || o.Status != "revoked" {
		t.Fatalf("order 4 = %+v, %v", o, err)
	}

	// Linking a division makes its unassigned orders adoptable; 5's renewal
	// 6 is alice's, so carol gets 5 without it.
	adoptable, err := s.UnassignedOrders(ctx, true, 0, 0)
	must(t, err)
	if len(adoptable) != 0 {
		t.Fatalf("adoptable before the link: %d", len(adoptable))
	}
	must(t, s.LinkContainer(ctx, "carol", 300))
	adoptable, err = s.UnassignedOrders(ctx, true, 0, 0)
	must(t, err)
	if len(adoptable) != 2 || adoptable[0].Order.ID != 3 || adoptable[1].Order.RenewedBy != 6 || adoptable[1].Container != 300 {
		t.Fatalf("adoptable = %+v", adoptable)
	}
	page, err := s.UnassignedOrders(ctx, false, 3, 1)
	must(t, err)
	if len(page) != 1 || page[0].Order.ID != 5 {
		t.Fatalf("a page of unassigned orders: %+v", page)
	}
	res = apply(nil, adoptable...)
	if got, want := changeList(res), "3:adopted 5:adopted"; got != want || len(res.Conflicts) != 1 || res.Conflicts[0].OrderID != 5 {
		t.Errorf("adoption: changes %s, want %s; conflicts %+v", got, want, res.Conflicts)
	}
	if got, want := owners(t, s, 3, 5, 6), "3:carol>0 5:carol>0 6:alice>0"; got != want {
		t.Fatalf("owners %s, want %s", got, want)
	}
	if refs, err := s.UnassignedRefs(ctx); err != nil || len(refs) != 0 {
		t.Fatalf("unassigned after adoption: %v %v", refs, err)
	}

	// A dry run writes nothing, and its later batches see its earlier ones:
	// 11 renews 10, so it is alice's though its division is nobody's.
	before := owners(t, s, 10, 11)
	dry := ccsync.NewDryRun(s)
	first := apply(dry, upstream(t, 10, 11, 100, "issued"))
	second := apply(dry, upstream(t, 11, 0, 900, "issued"))
	if changeList(first) != "10:added,renewed>11" || changeList(second) != "11:added" || second.Changes[0].MemberID != first.Changes[0].MemberID {
		t.Fatalf("dry run: %+v then %+v", first, second)
	}
	if after := owners(t, s, 10, 11); after != before || before != "10:- 11:-" {
		t.Fatalf("a dry run wrote: %s", after)
	}

	// A bad batch writes nothing.
	_, err = ccsync.ApplyBatch(ctx, s, []storekit.UpstreamOrder{upstream(t, 20, 0, 100, "issued"),
		upstream(t, 21, 0, 100, "issued"), upstream(t, 21, 0, 100, "issued")})
	wantErr(t, err, certorder.ErrInvalid)
	if got := owners(t, s, 20, 21); got != "20:- 21:-" {
		t.Fatalf("a refused batch left %s", got)
	}
}

func testSyncState(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	st, err := s.SyncState(ctx, 10)
	must(t, err)
	if !st.Cursor.IsZero() || len(st.Runs) != 0 {
		t.Fatalf("a new store's sync state: %+v", st)
	}
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ok := storekit.SyncRun{Started: base, Finished: base.Add(time.Minute), Instance: "host:1", OK: true, Cursor: base,
		Summary: storekit.SyncSummary{Full: true, Listed: 10, Fetched: 9, New: 8, Requests: 11, LimiterWait: time.Second,
			ByStatus: map[string]int{"issued": 7, "pending": 2}}}
	must(t, s.RecordSyncRun(ctx, ok))
	failed := storekit.SyncRun{Started: base.Add(time.Hour), Finished: base.Add(time.Hour + time.Second), Instance: "host:2",
		Error: "digicert: list orders: HTTP 503", Cursor: base.Add(time.Hour), Summary: storekit.SyncSummary{Listed: 1}}
	must(t, s.RecordSyncRun(ctx, failed))
	st, err = s.SyncState(ctx, 10)
	must(t, err)
	if !st.Cursor.Equal(base) || len(st.Runs) != 2 {
		t.Fatalf("sync state: %+v", st)
	}
	if r := st.Runs[0]; r.OK || r.Error != failed.Error || r.Instance != "host:2" || !r.Started.Equal(failed.Started) {
		t.Errorf("the newest run = %+v", r)
	}
	if r := st.Runs[1]; !r.OK || !reflect.DeepEqual(r.Summary, ok.Summary) || !r.Finished.Equal(ok.Finished) || !r.Cursor.Equal(base) || r.ID == 0 {
		t.Errorf("the first run = %+v", r)
	}
	for i := range storekit.MaxSyncRuns {
		run := ok
		run.Cursor = base.Add(time.Duration(i+2) * time.Hour)
		must(t, s.RecordSyncRun(ctx, run))
	}
	st, err = s.SyncState(ctx, 1000)
	must(t, err)
	if len(st.Runs) != storekit.MaxSyncRuns || !st.Cursor.Equal(base.Add(time.Duration(storekit.MaxSyncRuns+1)*time.Hour)) {
		t.Fatalf("%d runs kept, cursor %v", len(st.Runs), st.Cursor)
	}
}

func testSyncLock(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	lock, ok, err := s.LockSync(ctx)
	must(t, err)
	if !ok {
		t.Fatal("a free lock was not taken")
	}
	must(t, lock.Check(ctx))
	if other, ok, err := s.LockSync(ctx); err != nil || ok {
		if other != nil {
			other.Release()
		}
		t.Fatalf("the lock was taken twice: %v", err)
	}
	lock.Release()
	lock, ok, err = s.LockSync(ctx)
	must(t, err)
	if !ok {
		t.Fatal("a released lock was not taken again")
	}
	lock.Release()
}
