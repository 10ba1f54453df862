package digicert_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
)

// testKey is the key the simulator accepts; it must never show in an error.
const testKey = "dc-test-key-0123456789abcdef"

// start is the simulated now of every test that uses a fake clock.
var start = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	clock *digicerttest.Clock
	sim   *digicerttest.Server
	url   string
	c     *digicert.Client
}

// newEnv starts a simulator on loopback and a client of it, both on one
// fake clock: limiter waits and backoff take no real time.
func newEnv(t *testing.T, simOpts digicerttest.Options, opts ...digicert.Option) *env {
	t.Helper()
	e := &env{clock: digicerttest.NewClock(start)}
	simOpts.APIKey = testKey
	simOpts.Clock = e.clock
	e.sim = digicerttest.NewServer(simOpts)
	ts := httptest.NewServer(e.sim)
	t.Cleanup(ts.Close)
	e.url = ts.URL + digicerttest.BasePath
	opts = append([]digicert.Option{digicert.WithClock(e.clock.Now, e.clock.Sleep), digicert.WithClockSkew(0)}, opts...)
	c, err := digicert.New(e.url, testKey, opts...)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

func noKey(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), testKey) {
		t.Fatalf("the API key is in the error: %v", err)
	}
	if err != nil && strings.Contains(fmt.Sprintf("%+v %#v", err, err), testKey) {
		t.Fatalf("the API key is in the error's formatting")
	}
}

func TestOrderPagesWalksEveryOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{})
	g, err := e.sim.Generate(2500, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []int64
	pages := 0
	for page, err := range e.c.OrderPages(ctx, digicert.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if page.Page.Total != g.Orders || page.Page.Limit != digicert.MaxLimit || page.Page.Offset != len(ids) {
			t.Errorf("page %d: page info %+v", pages, page.Page)
		}
		for _, o := range page.Orders {
			ids = append(ids, o.ID)
		}
		if pages > 10 {
			t.Fatal("more pages than the dataset has")
		}
	}
	if pages != 3 || !slices.Equal(ids, e.sim.OrderIDs()) {
		t.Errorf("%d pages, %d orders; want 3 pages with all %d orders in id order", pages, len(ids), g.Orders)
	}
	if n := e.sim.Requests()[digicerttest.EndpointListOrders]; n != 3 {
		t.Errorf("%d List orders requests, want 3", n)
	}

	// A smaller page size and a start offset.
	list, err := e.c.ListOrders(ctx, digicert.ListOptions{Offset: 2490, Limit: 20, Sort: "-id"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Orders) != 10 || list.Page.Offset != 2490 || list.Orders[0].ID < list.Orders[9].ID {
		t.Errorf("offset 2490 limit 20 sorted -id: %d orders, page %+v", len(list.Orders), list.Page)
	}
	o := list.Orders[0]
	if o.Container.ID == 0 || o.Product.NameID == "" || o.DateCreated == "" || o.Certificate.CommonName == "" {
		t.Errorf("summary fields missing: %+v", o)
	}
}

func TestListOrdersFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{})
	if _, err := e.sim.Generate(600, 2); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	all := map[int64]digicert.OrderSummary{}
	for page, err := range e.c.OrderPages(ctx, digicert.ListOptions{Limit: 250}) {
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Orders {
			all[o.ID] = o
		}
	}

	renewed, err := e.c.ListOrders(ctx, digicert.ListOptions{Filters: map[string]string{"is_renewed": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for id := range all {
		if e.sim.RenewedBy(id) != 0 {
			want++
		}
	}
	if len(renewed.Orders) != want || want == 0 {
		t.Errorf("is_renewed=1 gave %d orders, want %d", len(renewed.Orders), want)
	}
	for _, o := range renewed.Orders {
		if !o.IsRenewed || e.sim.RenewedBy(o.ID) == 0 {
			t.Errorf("order %d listed as renewed but is not", o.ID)
		}
	}

	some := renewed.Orders[0].Container.ID
	inContainer, err := e.c.ListOrders(ctx, digicert.ListOptions{Filters: map[string]string{"container_id": fmt.Sprint(some)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range inContainer.Orders {
		if o.Container.ID != some {
			t.Errorf("container filter %d let order %d of container %d through", some, o.ID, o.Container.ID)
		}
	}
	if len(inContainer.Orders) == 0 || len(inContainer.Orders) == len(all) {
		t.Errorf("container filter kept %d of %d orders", len(inContainer.Orders), len(all))
	}

	from, to := start.Add(-100*24*time.Hour), start.Add(-40*24*time.Hour)
	recent, err := e.c.ListOrders(ctx, digicert.ListOptions{Filters: map[string]string{"date_created": digicert.DateRange(from, to)}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]bool{}
	for _, o := range recent.Orders {
		got[o.ID] = true
		created, err := time.Parse(time.RFC3339, o.DateCreated)
		if err != nil {
			t.Fatal(err)
		}
		// DateRange may widen the range by an hour at either end.
		if created.Before(from.Add(-time.Hour)) || created.After(to.Add(time.Hour)) {
			t.Errorf("order %d created %v is outside %v..%v", o.ID, created, from, to)
		}
	}
	for id, o := range all {
		created, _ := time.Parse(time.RFC3339, o.DateCreated)
		if !created.Before(from) && !created.After(to) && !got[id] {
			t.Errorf("order %d created %v is missing from the date_created filter", id, created)
		}
	}

	before := e.sim.Requests()[digicerttest.EndpointListOrders]
	_, err = e.c.ListOrders(ctx, digicert.ListOptions{Filters: map[string]string{"no_such_property": "1"}})
	var apiErr *digicert.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Errorf("unknown filter: err = %v, want an APIError with status 400", err)
	}
	if n := e.sim.Requests()[digicerttest.EndpointListOrders] - before; n != 1 {
		t.Errorf("a 400 was tried %d times, want 1 (not retried)", n)
	}

	for _, bad := range []digicert.ListOptions{{Limit: 1001}, {Limit: -1}, {Offset: -5},
		{Filters: map[string]string{"a]&x": "1"}}} {
		if _, err := e.c.ListOrders(ctx, bad); err == nil {
			t.Errorf("ListOrders(%+v) accepted", bad)
		}
	}
}

func TestOrderInfo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{})
	id, err := e.sim.AddOrder(digicerttest.OrderSpec{ContainerID: 77, CommonName: "a.example.com", ACMEDirectory: "https://acme.example/dir"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.Issue(id, start.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o, err := e.c.OrderInfo(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if o.ID != id || o.Status != "issued" || o.Container.ID != 77 || o.Certificate.CommonName != "a.example.com" ||
		o.Certificate.ValidTill == "" || o.IsRenewed || o.RenewedOrderID != 0 || len(o.Raw) == 0 {
		t.Errorf("order info: %+v", o)
	}
	spec, err := digicert.SpecOrder(o)
	if err != nil {
		t.Fatal(err)
	}
	checkMemberSafe(t, spec)
	if !strings.Contains(string(spec), `"api_key":{"name":"https://acme.example/dir","key_type":"acme_url"}`) {
		t.Errorf("api_key not mapped: %s", spec)
	}

	_, err = e.c.OrderInfo(ctx, 999)
	if !errors.Is(err, digicert.ErrNotFound) {
		t.Errorf("missing order: err = %v, want ErrNotFound", err)
	}
	if _, err := e.c.OrderInfo(ctx, 0); err == nil {
		t.Error("order 0 accepted")
	}
	if n := e.sim.Requests()[digicerttest.EndpointOrderInfo]; n != 2 {
		t.Errorf("%d Order info requests, want 2 (a 404 is not retried; 0 is refused before asking)", n)
	}
}

// changeAt issues a new order at t (a status change at t).
func changeAt(t *testing.T, sim *digicerttest.Server, at time.Time) int64 {
	t.Helper()
	id, err := sim.AddOrder(digicerttest.OrderSpec{Created: at.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Issue(id, at); err != nil {
		t.Fatal(err)
	}
	return id
}

func ids(changes []digicert.StatusChange) []int64 {
	var out []int64
	for _, ch := range changes {
		out = append(out, ch.OrderID)
	}
	return out
}

func TestStatusChangesSinceRecent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{})
	old := changeAt(t, e.sim, start.Add(-3*time.Hour))
	a := changeAt(t, e.sim, start.Add(-90*time.Minute))
	b := changeAt(t, e.sim, start.Add(-time.Minute))
	// A renewal marks the old order renewed without changing its status.
	renewal, err := e.sim.Renew(old, 0, start.Add(-30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.c.StatusChangesSince(context.Background(), start.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), []int64{a, b}) {
		t.Errorf("changes since 2h ago: %v, want [%d %d] (not the renewed %d nor its pending renewal %d)",
			ids(got), a, b, old, renewal)
	}
	if got[0].Status != "issued" || got[0].CertificateID == 0 {
		t.Errorf("change: %+v", got[0])
	}
	if n := e.sim.Requests()[digicerttest.EndpointStatusChanges]; n != 1 {
		t.Errorf("%d requests for a 2-hour window, want 1", n)
	}

	// A later status change of the same order shows its new status.
	if err := e.sim.SetStatus(a, "revoked", start); err != nil {
		t.Fatal(err)
	}
	got, err = e.c.StatusChangesSince(context.Background(), start.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(ids(got), a); i < 0 || got[i].Status != "revoked" {
		t.Errorf("after revoking %d: %+v", a, got)
	}
}

func TestStatusChangesSplitsLongWindows(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{})
	tooOld := changeAt(t, e.sim, start.Add(-25*24*time.Hour))
	var want []int64
	for _, daysAgo := range []int{19, 13, 8, 6, 2} {
		want = append(want, changeAt(t, e.sim, start.Add(-time.Duration(daysAgo)*24*time.Hour)))
	}
	ctx := context.Background()
	got, err := e.c.StatusChangesSince(ctx, start.Add(-20*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), want) {
		t.Errorf("changes of the last 20 days: %v, want %v (not %d, 25 days old)", ids(got), want, tooOld)
	}
	// 13 days by date range in 2 calls of under 7 days, then the last 7 days by seconds.
	if n := e.sim.Requests()[digicerttest.EndpointStatusChanges]; n != 3 {
		t.Errorf("%d requests for 20 days, want 3", n)
	}

	e.sim.ResetCounts()
	got, err = e.c.StatusChanges(ctx, start.Add(-30*24*time.Hour), start.Add(-7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), append([]int64{tooOld}, want[:3]...)) {
		t.Errorf("changes from 30 to 7 days ago: %v", ids(got))
	}
	if n := e.sim.Requests()[digicerttest.EndpointStatusChanges]; n != 4 {
		t.Errorf("%d requests for 23 days, want 4", n)
	}
	if len(e.sim.Violations()) != 0 {
		t.Errorf("violations: %v", e.sim.Violations())
	}
	if _, err := e.c.StatusChanges(ctx, start, start); err == nil {
		t.Error("an empty range was accepted")
	}
}

func TestStatusChangesPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{NoLimits: true})
	for n := range 2100 {
		id, err := e.sim.AddOrder(digicerttest.OrderSpec{Created: start.Add(-2 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.sim.SetStatus(id, "rejected", start.Add(-time.Duration(n)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.c.StatusChangesSince(context.Background(), start.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2100 || !slices.IsSortedFunc(got, func(a, b digicert.StatusChange) int { return int(a.OrderID - b.OrderID) }) {
		t.Errorf("%d changes, want 2100 sorted by order", len(got))
	}
	if r := e.sim.Requests()[digicerttest.EndpointStatusChanges]; r != 3 {
		t.Errorf("%d requests for 2100 changes, want 3 pages of 1000", r)
	}
}
