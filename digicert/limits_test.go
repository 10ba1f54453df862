package digicert_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
)

// TestLimiterKeepsInsideDocumentedLimits runs 1200 calls through the
// default limiter against a simulator enforcing DigiCert's documented
// limits, on one fake clock: over four simulated minutes both the 5-second
// and the 3-minute windows fill, and no request may break either.
func TestLimiterKeepsInsideDocumentedLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{}) // default limits on both sides
	id := changeAt(t, e.sim, start.Add(-time.Hour))
	ctx := context.Background()
	began := e.clock.Now()
	const calls = 1200
	for i := range calls {
		if _, err := e.c.OrderInfo(ctx, id); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if v := e.sim.Violations(); len(v) != 0 {
		t.Fatalf("%d requests broke a limit, first %+v", len(v), v[0])
	}
	st := e.c.Stats()
	if st.Requests != calls || st.ByStatus[200] != calls || st.LimiterWaits == 0 || st.LimiterWait <= 0 {
		t.Errorf("stats %+v", st)
	}
	// 1000 per 3 minutes with 5% headroom: 1200 calls need over 3 minutes,
	// and the limiter should not be much slower than the limits allow.
	elapsed := e.clock.Now().Sub(began)
	if elapsed < 3*time.Minute || elapsed > 5*time.Minute {
		t.Errorf("1200 calls took %v of simulated time, want between 3 and 5 minutes", elapsed)
	}
	if st.LimiterWait > elapsed {
		t.Errorf("waited %v on the limiter in %v", st.LimiterWait, elapsed)
	}
}

// TestSimulatorCatchesAnUnlimitedClient shows the check above can fail: a
// client without a limiter breaks the 5-second limit at once.
func TestSimulatorCatchesAnUnlimitedClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{}, digicert.WithLimits(), digicert.WithRetry(1, time.Second, time.Second))
	id := changeAt(t, e.sim, start.Add(-time.Hour))
	var refused int
	for range 150 {
		if _, err := e.c.OrderInfo(context.Background(), id); err != nil {
			refused++
		}
	}
	if refused != 50 || len(e.sim.Violations()) != 50 {
		t.Errorf("%d refused, %d violations; want 50 of 150 calls in one instant over 100 per 5s",
			refused, len(e.sim.Violations()))
	}
}

// TestLimiterInRealTime runs concurrent callers on the real clock against
// scaled-down limits. The client keeps to 80% of the simulator's limits:
// on a busy machine a request may leave later than the limiter let it.
func TestLimiterInRealTime(t *testing.T) {
	t.Parallel()
	simLimits := []digicert.Limit{{Requests: 20, Per: 200 * time.Millisecond}, {Requests: 60, Per: time.Second}}
	sim := digicerttest.NewServer(digicerttest.Options{APIKey: testKey, Limits: simLimits})
	ts := httptest.NewServer(sim)
	defer ts.Close()
	id, err := sim.AddOrder(digicerttest.OrderSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Issue(id, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	c, err := digicert.New(ts.URL+digicerttest.BasePath, testKey, digicert.WithRetry(1, time.Second, time.Second),
		digicert.WithLimits(digicert.Limit{Requests: 16, Per: 200 * time.Millisecond}, digicert.Limit{Requests: 48, Per: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 4 {
		wg.Go(func() {
			for range 25 {
				if _, err := c.OrderInfo(ctx, id); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if v := sim.Violations(); len(v) != 0 {
		t.Errorf("%d violations, first %+v", len(v), v[0])
	}
	if st := c.Stats(); st.Requests != 100 || st.LimiterWait <= 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestLimitsAreChecked(t *testing.T) {
	t.Parallel()
	for _, l := range []digicert.Limit{{Requests: 0, Per: time.Second}, {Requests: 5, Per: 0}} {
		if _, err := digicert.New(digicert.DefaultURL, "k", digicert.WithLimits(l)); err == nil {
			t.Errorf("limit %v accepted", l)
		}
	}
	c, err := digicert.New(digicert.DefaultURL, "k")
	if err != nil {
		t.Fatal(err)
	}
	got := c.Limits()
	want := digicert.DocumentedLimits()
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] ||
		want[0] != (digicert.Limit{Requests: 1000, Per: 3 * time.Minute}) || want[1] != (digicert.Limit{Requests: 100, Per: 5 * time.Second}) {
		t.Errorf("default limits %v", got)
	}
}
