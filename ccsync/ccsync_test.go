package ccsync_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/stores"
)

// testKey is the simulator's API key; it must never show in a log or error.
const testKey = "dc-sync-test-key-5e2f9a"

var start = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// env is a simulator on loopback and a store, a client and a syncer, all
// on one fake clock: rate-limit waits and backoff take no real time.
type env struct {
	t      testing.TB
	clock  *digicerttest.Clock
	sim    *digicerttest.Server
	store  storekit.Store
	client *digicert.Client
	syncer *ccsync.Syncer
	log    *bytes.Buffer
}

func newEnv(t testing.TB, dsn string, simOpts digicerttest.Options, clientOpts ...digicert.Option) *env {
	t.Helper()
	e := &env{t: t, clock: digicerttest.NewClock(start), log: &bytes.Buffer{}}
	simOpts.APIKey, simOpts.Clock = testKey, e.clock
	e.sim = digicerttest.NewServer(simOpts)
	ts := httptest.NewServer(e.sim)
	t.Cleanup(ts.Close)
	store, err := stores.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e.store = store
	clientOpts = append([]digicert.Option{digicert.WithClock(e.clock.Now, e.clock.Sleep)}, clientOpts...)
	if e.client, err = digicert.New(ts.URL+digicerttest.BasePath, testKey, clientOpts...); err != nil {
		t.Fatal(err)
	}
	e.syncer, err = ccsync.New(ccsync.Config{Store: store, Client: e.client, Now: e.clock.Now, Instance: "test",
		Logger: slog.New(slog.NewTextHandler(e.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) members(names ...string) {
	e.t.Helper()
	for _, name := range names {
		if _, err := e.store.AddMember(context.Background(), name); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) link(member string, container int64) {
	e.t.Helper()
	if err := e.store.LinkContainer(context.Background(), member, container); err != nil {
		e.t.Fatal(err)
	}
}

// sync runs a sync that must succeed.
func (e *env) sync(opts ccsync.Options) ccsync.Report {
	e.t.Helper()
	rep, err := e.syncer.Run(context.Background(), opts)
	if err != nil {
		e.t.Fatalf("sync: %v\n%s\nlog:\n%s", err, rep.Line(true), e.log)
	}
	if strings.Contains(e.log.String(), testKey) {
		e.t.Fatal("the log holds the API key")
	}
	return rep
}

// upstreamOrder is what the test reads of the simulator's order.
type upstreamOrder struct {
	id, container, renewedBy int64
	issued                   bool
}

func upstreamOrders(t testing.TB, sim *digicerttest.Server) []upstreamOrder {
	t.Helper()
	var out []upstreamOrder
	for _, id := range sim.OrderIDs() {
		raw, ok := sim.OrderInfo(id)
		if !ok {
			t.Fatalf("order %d vanished", id)
		}
		var info struct {
			Certificate struct {
				ValidTill string `json:"valid_till"`
			} `json:"certificate"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		out = append(out, upstreamOrder{id, sim.ContainerOf(id), sim.RenewedBy(id), info.Certificate.ValidTill != ""})
	}
	return out
}

// expectedOwners applies issue 11's ownership rules to the simulator's
// dataset, on their own: an order, issued or not, belongs to the owner of
// the stored order it renews, else to the member its division is linked
// to, else to nobody ("").
func expectedOwners(orders []upstreamOrder, links map[int64]string) map[int64]string {
	owner := map[int64]string{}
	renews := map[int64]int64{} // renewal -> renewed
	for _, o := range orders {
		if o.renewedBy != 0 {
			renews[o.renewedBy] = o.id
		}
	}
	for _, o := range orders { // ascending: a renewed order comes first
		if old, ok := renews[o.id]; ok && owner[old] != "" {
			owner[o.id] = owner[old]
		} else {
			owner[o.id] = links[o.container]
		}
	}
	return owner
}

// actualOwners reads who owns each order in the store ("" unassigned; absent: not held).
func actualOwners(t testing.TB, s storekit.Store, orders []upstreamOrder) map[int64]string {
	t.Helper()
	ctx := context.Background()
	ids := make([]int64, len(orders))
	for i, o := range orders {
		ids[i] = o.id
	}
	known, err := s.KnownOrders(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	members, err := s.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[int64]string{}
	for _, m := range members {
		names[m.ID] = m.Name
	}
	got := map[int64]string{}
	for id, k := range known {
		got[id] = names[k.MemberID]
	}
	return got
}

func diffOwners(t testing.TB, got, want map[int64]string) {
	t.Helper()
	n := 0
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			if n++; n <= 10 {
				t.Errorf("order %d: owner %q (held: %v), want %q", id, g, ok, w)
			}
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			if n++; n <= 10 {
				t.Errorf("order %d is held but should not be", id)
			}
		}
	}
	if n > 10 {
		t.Errorf("... %d differences in all", n)
	}
}

// The first sync of a dataset with renewal chains across divisions gives
// every order the owner the rules say, records renewals, keeps the rest
// unassigned, and says so in the audit trail; a second run changes nothing.
func TestFirstSync(t *testing.T) {
	t.Parallel()
	testdb.Each(t, testFirstSync)
}

func testFirstSync(t *testing.T, dsn string) {
	e := newEnv(t, dsn, digicerttest.Options{})
	g, err := e.sim.Generate(400, 7)
	if err != nil {
		t.Fatal(err)
	}
	e.members("alice", "bob")
	e.link("alice", 10001)
	e.link("bob", 10002)
	rep := e.sync(ccsync.Options{})

	orders := upstreamOrders(t, e.sim)
	links := map[int64]string{10001: "alice", 10002: "bob"}
	want := expectedOwners(orders, links)
	diffOwners(t, actualOwners(t, e.store, orders), want)

	crossOwned, unassigned, renewals := 0, 0, 0
	for _, o := range orders {
		if want[o.id] == "" {
			unassigned++
		}
		if o.renewedBy != 0 && want[o.renewedBy] != "" {
			renewals++
			if want[o.renewedBy] != links[e.sim.ContainerOf(o.renewedBy)] {
				crossOwned++ // a renewal owned against its division's link
			}
		}
	}
	if crossOwned == 0 || unassigned == 0 {
		t.Fatalf("the dataset does not exercise the rules: %d renewals owned across divisions, %d unassigned", crossOwned, unassigned)
	}
	if !rep.Full || rep.Listed != g.Orders || rep.ByStatus["pending"] != g.Pending || rep.Fetched != g.Orders ||
		rep.New != g.Orders-unassigned || rep.Unassigned != unassigned || rep.Changed != 0 || rep.Conflicts != 0 {
		t.Errorf("report %+v\ngenerated %+v, %d unassigned", rep.SyncSummary, g, unassigned)
	}
	if rep.Requests != int64(rep.Fetched)+1 {
		t.Errorf("%d requests for %d orders on one page", rep.Requests, rep.Fetched)
	}
	if len(rep.UnassignedOrders) != unassigned || len(ccsync.UnassignedByDivision(rep.UnassignedOrders, 3)) == 0 {
		t.Errorf("unassigned orders %v", rep.UnassignedOrders)
	}

	// Renewal relations recorded as the CA has them, for owned orders.
	for _, o := range orders {
		if want[o.id] == "" {
			continue
		}
		got, err := e.store.FindOrder(context.Background(), o.id)
		if err != nil {
			t.Fatal(err)
		}
		if got.RenewedBy != o.renewedBy {
			t.Errorf("order %d renewed by %d, want %d", o.id, got.RenewedBy, o.renewedBy)
		}
	}

	audit, err := e.store.Audit(context.Background(), certorder.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, a := range audit {
		actions[a.Action]++
		if a.Member != "alice" && a.Member != "bob" {
			t.Errorf("audit entry %+v names no member", a)
		}
	}
	if actions["sync.added"] != rep.New || actions["sync.renewed"] != rep.Renewals || rep.Renewals == 0 {
		t.Errorf("audit actions %v for %+v", actions, rep.SyncSummary)
	}

	st, err := e.store.SyncState(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Cursor.Equal(start) || len(st.Runs) != 1 || !st.Runs[0].OK || !reflect.DeepEqual(st.Runs[0].Summary, rep.SyncSummary) {
		t.Fatalf("sync state %+v", st)
	}

	// Nothing changed upstream: the next (incremental) run changes nothing,
	// with a handful of requests.
	e.clock.Advance(10 * time.Minute)
	again := e.sync(ccsync.Options{})
	if again.Full || again.New != 0 || again.Changed != 0 || again.Fetched != 0 || again.Requests > 4 {
		t.Errorf("second run: %s", again.Line(false))
	}
}

// A dry run reports what it would do and writes nothing; its report
// matches the real run's.
func TestDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.SQLite(t), digicerttest.Options{NoLimits: true}, digicert.WithLimits())
	if _, err := e.sim.Generate(300, 11); err != nil {
		t.Fatal(err)
	}
	e.members("alice", "bob")
	e.link("alice", 10001)
	e.link("bob", 10003)
	dry := e.sync(ccsync.Options{DryRun: true})
	var dump bytes.Buffer
	if err := export.Write(context.Background(), e.store, &dump); err != nil {
		t.Fatal(err)
	}
	st, err := e.store.SyncState(context.Background(), 1)
	if err != nil || !st.Cursor.IsZero() || len(st.Runs) != 0 || strings.Count(dump.String(), "\n") != 4 {
		t.Fatalf("a dry run wrote: %+v %v\n%s", st, err, dump.String())
	}
	if audit, _ := e.store.Audit(context.Background(), certorder.AuditQuery{}); len(audit) != 0 {
		t.Fatalf("a dry run wrote %d audit entries", len(audit))
	}
	real := e.sync(ccsync.Options{})
	dry.DryRun, dry.Requests, dry.Took, dry.LimiterWait = false, real.Requests, real.Took, real.LimiterWait
	if !reflect.DeepEqual(dry.SyncSummary, real.SyncSummary) || dry.New == 0 || dry.Renewals == 0 {
		t.Errorf("dry run %+v\nreal run %+v", dry.SyncSummary, real.SyncSummary)
	}
}

// Linking a division later hands its unassigned orders, and the renewals
// of those in other divisions, to the member at the next run, without
// fetching them again. An order a member has is never moved: a division
// linked to another member is a conflict, reported.
func TestAdoptionAndConflicts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.SQLite(t), digicerttest.Options{NoLimits: true}, digicert.WithLimits())
	if _, err := e.sim.Generate(400, 7); err != nil {
		t.Fatal(err)
	}
	e.members("alice", "bob", "carol")
	e.link("alice", 10001)
	first := e.sync(ccsync.Options{})
	if first.Unassigned == 0 {
		t.Fatal("nothing unassigned")
	}
	e.link("carol", 10003)
	e.clock.Advance(time.Minute)
	second := e.sync(ccsync.Options{})
	orders := upstreamOrders(t, e.sim)
	// What alice has stays hers; the unassigned go to carol when in her
	// division or renewing one of hers.
	want := expectedOwners(orders, map[int64]string{10001: "alice"})
	renews := map[int64]int64{}
	for _, o := range orders {
		if o.renewedBy != 0 {
			renews[o.renewedBy] = o.id
		}
	}
	for _, o := range orders {
		if want[o.id] != "" {
			continue
		}
		if old, ok := renews[o.id]; ok && want[old] == "carol" {
			want[o.id] = "carol"
		} else if o.container == 10003 {
			want[o.id] = "carol"
		}
	}
	diffOwners(t, actualOwners(t, e.store, orders), want)
	if second.New == 0 || second.Fetched != 0 || second.Unassigned >= first.Unassigned {
		t.Errorf("after the link: %s", second.Line(false))
	}
	audit, err := e.store.Audit(context.Background(), certorder.AuditQuery{Member: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	adopted := 0
	for _, a := range audit {
		if a.Action == "sync.adopted" {
			adopted++
		}
	}
	if adopted != second.New {
		t.Errorf("carol's audit: %d adoptions, the run says %d", adopted, second.New)
	}

	// Unlinking keeps the orders; linking the division to bob moves none of
	// them, and each one the sync touches is a reported conflict.
	if err := e.store.UnlinkContainer(context.Background(), "carol", 10003); err != nil {
		t.Fatal(err)
	}
	e.link("bob", 10003)
	var carols int64
	for _, o := range orders {
		if want[o.id] == "carol" && o.container == 10003 {
			carols = o.id
			break
		}
	}
	e.clock.Advance(time.Minute)
	if err := e.sim.SetStatus(carols, "revoked", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	third := e.sync(ccsync.Options{})
	i := slices.IndexFunc(third.ConflictList, func(c ccsync.Conflict) bool { return c.OrderID == carols })
	if i < 0 || third.ConflictList[i].Member != "carol" || third.ConflictList[i].Other != "bob" || third.StatusChanged != 1 {
		t.Errorf("a division linked to another member: %s %+v", third.Line(false), third.ConflictList)
	}
	if o, err := e.store.FindOrder(context.Background(), carols); err != nil || o.Member != "carol" || o.Status != "revoked" {
		t.Errorf("order %d = %+v, %v", carols, o, err)
	}
	if !strings.Contains(e.log.String(), "conflict") {
		t.Errorf("the conflict is not logged:\n%s", e.log)
	}
}

// The lock: a second sync while one runs is refused with ErrBusy.
func TestBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.SQLite(t), digicerttest.Options{NoLimits: true}, digicert.WithLimits())
	lock, ok, err := e.store.LockSync(context.Background())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := e.syncer.Run(context.Background(), ccsync.Options{}); !errors.Is(err, ccsync.ErrBusy) {
		t.Fatalf("a run under another's lock: %v", err)
	}
	lock.Release()
	e.sync(ccsync.Options{})
}

// The run record keeps the counts by status bounded: at most MaxStatuses
// by name, each escaped and cut short (internal/printable), the rest as
// OtherStatus, whatever statuses CertCentral sends.
func TestStatusCountsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.SQLite(t), digicerttest.Options{NoLimits: true})
	if _, err := e.sim.Generate(50, 2); err != nil {
		t.Fatal(err)
	}
	for i, id := range e.sim.OrderIDs() {
		if err := e.sim.SetStatus(id, fmt.Sprintf("\x1b[2J%d%s", i, strings.Repeat("y", 4000)), start); err != nil {
			t.Fatal(err)
		}
	}
	e.sync(ccsync.Options{})
	st, err := e.store.SyncState(context.Background(), 1)
	if err != nil || len(st.Runs) != 1 {
		t.Fatal(st, err)
	}
	counts, total := st.Runs[0].Summary.ByStatus, 0
	for status, n := range counts {
		total += n
		if len(status) > printable.Max || strings.ContainsRune(status, '\x1b') {
			t.Errorf("a status kept as %d bytes: %.40q", len(status), status)
		}
	}
	if len(counts) != ccsync.MaxStatuses+1 || counts[ccsync.OtherStatus] != 50-ccsync.MaxStatuses || total != 50 {
		t.Errorf("%d statuses counted, %d as other, %d in all", len(counts), counts[ccsync.OtherStatus], total)
	}
}
