package ccsync_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/testdb"
)

// An incremental run finds new orders, status changes, issuance and a
// renewal (marked only on the old order), and costs far fewer requests
// than a full run.
func TestIncremental(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.SQLite(t), digicerttest.Options{NoLimits: true}, digicert.WithLimits())
	if _, err := e.sim.Generate(1200, 3); err != nil { // two pages of the list (1000 a page)
		t.Fatal(err)
	}
	e.members("alice")
	for c := int64(10001); c <= 10003; c++ {
		e.link("alice", c)
	}
	full := e.sync(ctxOpts())

	e.clock.Advance(time.Hour)
	orders := upstreamOrders(t, e.sim)
	var renewable, revocable int64
	for _, o := range slices.Backward(orders) {
		k, err := e.store.FindOrder(context.Background(), o.id)
		if err != nil || o.renewedBy != 0 {
			continue
		}
		if renewable == 0 && k.Status == "issued" {
			renewable = o.id
		} else if revocable == 0 && k.Status == "issued" {
			revocable = o.id
		}
	}
	now := e.clock.Now()
	renewal, err := e.sim.Renew(renewable, 10009, now) // a division nobody has

	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetStatus(revocable, "revoked", now); err != nil {
		t.Fatal(err)
	}
	fresh, err := e.sim.AddOrder(digicerttest.OrderSpec{ContainerID: 10003, CommonName: "fresh.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := e.sim.AddOrder(digicerttest.OrderSpec{ContainerID: 10003, CommonName: "pending.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if err := e.sim.Issue(fresh, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)

	inc := e.sync(ctxOpts())
	// New: fresh, pending, and the renewal (pending, linked at once: it is
	// alice's, as the order it renews).
	if inc.Full || inc.Renewals != 1 || inc.New != 3 || inc.Changed != 2 || inc.StatusChanged != 1 ||
		inc.ByStatus["pending"] != 2 || inc.ByStatus["issued"] < 2 {
		t.Errorf("incremental: %s", inc.Line(false))
	}
	if inc.Requests*20 > full.Requests {
		t.Errorf("incremental run made %d requests, full run %d: not far fewer", inc.Requests, full.Requests)
	}
	t.Logf("full run: %d requests; incremental run: %d", full.Requests, inc.Requests)
	check := func(id int64, status string, renewedBy int64) {
		t.Helper()
		o, err := e.store.FindOrder(context.Background(), id)
		if err != nil || o.Status != status || o.RenewedBy != renewedBy {
			t.Errorf("order %d = %+v, %v; want %s renewed by %d", id, o, err, status, renewedBy)
		}
	}
	check(renewable, "issued", renewal)
	check(revocable, "revoked", 0)
	check(fresh, "issued", 0)
	check(pending, "pending", 0)
	check(renewal, "pending", 0)
	if o, err := e.store.FindOrder(context.Background(), renewal); err != nil || o.Member != "alice" || o.Certificate.ValidTill != "" {
		t.Errorf("the pending renewal, stored at once for the old order's member: %+v, %v", o, err)
	}

	// The renewal is issued later: a status change; the member sees the
	// certificate's dates after the next run.
	e.clock.Advance(time.Hour)
	issued := e.clock.Now().UTC()
	if err := e.sim.Issue(renewal, issued); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	inc = e.sync(ctxOpts())
	check(renewal, "issued", 0)
	o, err := e.store.FindOrder(context.Background(), renewal)
	if err != nil || o.Member != "alice" || inc.New != 0 || inc.StatusChanged != 1 {
		t.Fatalf("issuance: %+v, %v; %s", o, err, inc.Line(false))
	}
	if want := issued.Truncate(24*time.Hour).AddDate(0, 0, digicerttest.MaxCertificateDays(issued)).Format(time.DateOnly); o.Certificate.ValidTill != want {
		t.Errorf("valid_till %q after issuance upstream, want %s", o.Certificate.ValidTill, want)
	}
}

func ctxOpts() ccsync.Options { return ccsync.Options{} }

// A 429 storm and 5xx answers, against a simulator enforcing DigiCert's
// documented limits: the run succeeds without breaking a limit. A storm
// longer than the retries fails the run, which keeps the cursor and says
// what it did; the next run converges.
func TestStorm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.SQLite(t), digicerttest.Options{})
	if _, err := e.sim.Generate(600, 5); err != nil {
		t.Fatal(err)
	}
	e.members("alice")
	e.link("alice", 10001)
	storms := 0
	rep := e.sync(ccsync.Options{Progress: func(p ccsync.Progress) {
		// Three storms, none after the last order (nothing would retry).
		if p.Fetched > 0 && p.Fetched%150 == 0 && storms < min(3, p.Fetched/150) {
			storms++
			e.sim.FailNext(6, http.StatusTooManyRequests)
			e.sim.FailNext(1, http.StatusServiceUnavailable)
		}
	}})
	if storms < 2 || rep.Retries < int64(7*storms) {
		t.Errorf("%d storms, %d retries", storms, rep.Retries)
	}
	if v := e.sim.Violations(); len(v) != 0 {
		t.Fatalf("%d requests broke DigiCert's limits, the first %+v", len(v), v[0])
	}
	if rep.LimiterWait < time.Minute {
		t.Errorf("%d requests waited only %v on the limiter", rep.Requests, rep.LimiterWait)
	}
	t.Logf("%s", rep.Line(false))
	orders := upstreamOrders(t, e.sim)
	want := expectedOwners(orders, map[int64]string{10001: "alice"})
	diffOwners(t, actualOwners(t, e.store, orders), want)

	// Changes upstream, then a storm longer than the retries.
	var target int64
	for _, o := range orders {
		if want[o.id] == "alice" {
			target = o.id
			break
		}
	}
	e.clock.Advance(time.Hour)
	if err := e.sim.SetStatus(target, "revoked", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	before, err := e.store.SyncState(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	e.sim.FailNext(8, http.StatusBadGateway) // every attempt of the first call
	failed, err := e.syncer.Run(context.Background(), ccsync.Options{})
	if err == nil || !errors.Is(err, digicert.ErrUnavailable) || strings.Contains(err.Error(), testKey) {
		t.Fatalf("a run through a long storm: %v", err)
	}
	after, err := e.store.SyncState(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Cursor.Equal(before.Cursor) || after.Runs[0].OK || !strings.Contains(after.Runs[0].Error, "HTTP 502") ||
		failed.Requests != 8 {
		t.Fatalf("after a failed run: cursor %v (was %v), run %+v; report %s", after.Cursor, before.Cursor, after.Runs[0], failed.Line(true))
	}
	e.clock.Advance(time.Minute)
	again := e.sync(ccsync.Options{})
	if again.StatusChanged != 1 {
		t.Errorf("the rerun: %s", again.Line(false))
	}
	if v := e.sim.Violations(); len(v) != 0 {
		t.Fatalf("%d requests broke DigiCert's limits", len(v))
	}
}

// A run makes at most MaxFetches Order info requests, stores what it
// fetched, releases the lock and keeps the cursor; the next runs continue
// where it stopped, fetching nothing twice: a full first sync of 250
// orders in three runs of 100, then 250 status changes likewise, one of
// them changing again between the runs (fetched again, since it changed).
func TestFetchBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.SQLite(t), digicerttest.Options{NoLimits: true})
	if _, err := e.sim.Generate(250, 3); err != nil {
		t.Fatal(err)
	}
	bounded, err := ccsync.New(ccsync.Config{Store: e.store, Client: e.client, Now: e.clock.Now, Instance: "test", MaxFetches: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// runs syncs until one completes and returns how many Order info
	// requests each made.
	runs := func() []int {
		t.Helper()
		var fetched []int
		for range 5 {
			// Runs minutes apart: a status change list is asked with a margin
			// of clock skew (2 minutes) before its start.
			e.clock.Advance(10 * time.Minute)
			e.sim.ResetCounts()
			rep, err := bounded.Run(ctx, ccsync.Options{})
			fetched = append(fetched, e.sim.Requests()[digicerttest.EndpointOrderInfo])
			st, serr := e.store.SyncState(ctx, 1)
			if serr != nil {
				t.Fatal(serr)
			}
			if err == nil {
				if !st.Runs[0].OK || st.Cursor.Sub(rep.Started).Abs() > time.Millisecond {
					t.Fatalf("a complete run: %+v", st)
				}
				return fetched
			}
			if !errors.Is(err, ccsync.ErrIncomplete) || !rep.Incomplete || st.Runs[0].OK || st.Runs[0].Summary.Incomplete != true ||
				!strings.HasPrefix(rep.Line(true), "sync incomplete, cursor kept") {
				t.Fatalf("a run at the bound: %v; %s; %+v", err, rep.Line(true), st.Runs[0])
			}
		}
		t.Fatalf("no run completed: %v", fetched)
		return nil
	}
	if got := runs(); !slices.Equal(got, []int{100, 100, 50}) {
		t.Errorf("the first sync's Order info requests by run: %v, want [100 100 50]", got)
	}
	stored, err := e.store.KnownOrders(ctx, e.sim.OrderIDs())
	if err != nil || len(stored) != 250 {
		t.Fatalf("%d orders stored, want 250 (%v)", len(stored), err)
	}

	ids := e.sim.OrderIDs()
	for _, id := range ids {
		if err := e.sim.SetStatus(id, "canceled", e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(10 * time.Minute)
	e.sim.ResetCounts()
	if _, err := bounded.Run(ctx, ccsync.Options{}); !errors.Is(err, ccsync.ErrIncomplete) {
		t.Fatalf("250 status changes, a bound of 100: %v", err)
	}
	st, err := e.store.SyncState(ctx, 1)
	if err != nil || st.Runs[0].Summary.Resume == nil || st.Runs[0].Summary.Resume.After != ids[99] {
		t.Fatalf("where the run left off: %+v %v", st.Runs[0].Summary, err)
	}
	// The first order, fetched already, changes again: the next run fetches it.
	if err := e.sim.SetStatus(ids[0], "revoked", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := runs(); !slices.Equal(got, []int{100, 51}) {
		t.Errorf("the status changes' Order info requests by run after the first: %v, want [100 51]", got)
	}
	known, err := e.store.KnownOrders(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if want := map[bool]string{true: "revoked", false: "canceled"}[i == 0]; known[id].Status != want {
			t.Fatalf("order %d: %q, want %q", id, known[id].Status, want)
		}
	}
}
