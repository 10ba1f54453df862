package digicert_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
)

func TestRetries429AndBacksOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{})
	id := changeAt(t, e.sim, start.Add(-time.Hour))
	e.sim.FailNext(5, http.StatusTooManyRequests)
	before := e.clock.Now()
	realStart := time.Now()
	o, err := e.c.OrderInfo(context.Background(), id)
	if err != nil {
		t.Fatalf("5 answers 429 then 200: %v", err)
	}
	if o.ID != id {
		t.Errorf("got order %d", o.ID)
	}
	st := e.c.Stats()
	if st.Requests != 6 || st.ByStatus[429] != 5 || st.ByStatus[200] != 1 || st.Retries != 5 {
		t.Errorf("stats %+v, want 6 requests: 5×429, 1×200, 5 retries", st)
	}
	// Backoff 1s, 2s, 4s, 8s, 16s with equal jitter: between 15.5s and 31s.
	if st.BackoffWait < 15500*time.Millisecond || st.BackoffWait > 31*time.Second {
		t.Errorf("backoff %v, want between 15.5s and 31s", st.BackoffWait)
	}
	if passed := e.clock.Now().Sub(before); passed < st.BackoffWait {
		t.Errorf("the fake clock moved %v, less than the backoff %v", passed, st.BackoffWait)
	}
	if real := time.Since(realStart); real > 5*time.Second {
		t.Errorf("the retries took %v of real time", real)
	}

	e.sim.FailNext(20, http.StatusTooManyRequests)
	c, err := digicert.New(e.url, testKey, digicert.WithClock(e.clock.Now, e.clock.Sleep),
		digicert.WithRetry(3, time.Second, 4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.OrderInfo(context.Background(), id)
	var apiErr *digicert.APIError
	if !errors.Is(err, digicert.ErrRateLimited) || !errors.As(err, &apiErr) || apiErr.Attempts != 3 ||
		!slices.Contains(apiErr.Codes, "request_limit_exceeded") {
		t.Errorf("a 429 storm longer than the retries: err = %v", err)
	}
	noKey(t, err)
	if got := c.Stats().Requests; got != 3 {
		t.Errorf("%d requests, want 3", got)
	}
}

func TestRetries5xx(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{})
	id := changeAt(t, e.sim, start.Add(-time.Hour))
	e.sim.FailNext(1, http.StatusInternalServerError)
	e.sim.FailNext(1, http.StatusServiceUnavailable)
	if _, err := e.c.OrderInfo(context.Background(), id); err != nil {
		t.Fatalf("500, 503, then 200: %v", err)
	}
	if st := e.c.Stats(); st.ByStatus[500] != 1 || st.ByStatus[503] != 1 || st.ByStatus[200] != 1 {
		t.Errorf("stats by status %v", st.ByStatus)
	}

	e.sim.FailNext(10, http.StatusBadGateway)
	c, err := digicert.New(e.url, testKey, digicert.WithClock(e.clock.Now, e.clock.Sleep),
		digicert.WithRetry(4, time.Second, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.OrderInfo(context.Background(), id)
	if !errors.Is(err, digicert.ErrUnavailable) {
		t.Errorf("502 × 4: err = %v, want ErrUnavailable", err)
	}
	noKey(t, err)
}

func TestBackoffIsBoundedWithJitter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{})
	id := changeAt(t, e.sim, start.Add(-time.Hour))
	var mu sync.Mutex
	var sleeps []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		sleeps = append(sleeps, d)
		mu.Unlock()
		return e.clock.Sleep(ctx, d)
	}
	c, err := digicert.New(e.url, testKey, digicert.WithClock(e.clock.Now, sleep),
		digicert.WithRetry(7, 100*time.Millisecond, 800*time.Millisecond), digicert.WithLimits())
	if err != nil {
		t.Fatal(err)
	}
	e.sim.FailNext(6, http.StatusServiceUnavailable)
	if _, err := c.OrderInfo(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	caps := []time.Duration{100, 200, 400, 800, 800, 800}
	if len(sleeps) != len(caps) {
		t.Fatalf("slept %v, want %d backoffs", sleeps, len(caps))
	}
	for i, d := range sleeps {
		limit := caps[i] * time.Millisecond
		if d < limit/2 || d > limit {
			t.Errorf("backoff %d = %v, want between %v and %v", i+1, d, limit/2, limit)
		}
	}
}

func TestWrongKeyIsRefusedWithoutTheKey(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			e := newEnv(t, digicerttest.Options{})
			e.sim.SetWrongKeyStatus(status)
			e.sim.SetAPIKey("the-key-digicert-knows-now")
			ctx := context.Background()
			calls := map[string]func() error{
				"order info":  func() error { _, err := e.c.OrderInfo(ctx, 100001); return err },
				"list orders": func() error { _, err := e.c.ListOrders(ctx, digicert.ListOptions{}); return err },
				"status":      func() error { _, err := e.c.StatusChangesSince(ctx, start.Add(-time.Hour)); return err },
			}
			for name, call := range calls {
				err := call()
				if !errors.Is(err, digicert.ErrUnauthorized) {
					t.Errorf("%s: err = %v, want ErrUnauthorized", name, err)
				}
				if err != nil && !strings.Contains(err.Error(), "refused the API key") {
					t.Errorf("%s: the error does not say the key was refused: %v", name, err)
				}
				noKey(t, err)
			}
			if n := e.c.Stats().Requests; n != 3 {
				t.Errorf("%d requests, want 3: a refused key is not retried", n)
			}
		})
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	t.Parallel()
	c, err := digicert.New(digicert.DefaultURL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)} {
		if strings.Contains(text, testKey) {
			t.Fatalf("the key is printed: %s", text)
		}
	}
	for _, bad := range []struct{ url, key string }{
		{"ftp://x/", testKey}, {"not a url", testKey}, {"https://h/services/v2?x=1", testKey},
		{digicert.DefaultURL, ""}, {digicert.DefaultURL, testKey + "\r\nX: y"}, {digicert.DefaultURL, " " + testKey},
	} {
		_, err := digicert.New(bad.url, bad.key)
		if err == nil {
			t.Errorf("New(%q, …) accepted", bad.url)
		}
		noKey(t, err)
	}
}

// TestServerEchoingTheKey: should DigiCert, or a proxy, ever put the key in
// an answer, the error still does not carry it.
func TestServerEchoingTheKey(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-DC-DEVKEY")
		if strings.Contains(r.URL.Path, "/1") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"errors":[{"code":"bad_key|%s","message":"key %s is odd"}]}`, key, key)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "<html>no route for %s</html>", key)
	}))
	defer ts.Close()
	c, err := digicert.New(ts.URL, testKey, digicert.WithLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 2} {
		_, err := c.OrderInfo(context.Background(), id)
		if err == nil {
			t.Fatal("an error answer was taken for an order")
		}
		noKey(t, err)
	}

	ts.Close() // a network error names the URL, which holds no key
	c2, _ := digicert.New(ts.URL, testKey, digicert.WithRetry(2, time.Millisecond, time.Millisecond), digicert.WithLimits())
	_, err = c2.OrderInfo(context.Background(), 5)
	if err == nil || errors.Is(err, digicert.ErrUnauthorized) || !strings.Contains(err.Error(), ts.URL) {
		t.Errorf("a closed server: err = %v", err)
	}
	noKey(t, err)
	if st := c2.Stats(); st.ByStatus[0] != 1 {
		t.Errorf("network errors counted %v, want 1 under status 0 (a refused connection is not retried)", st.ByStatus)
	}
}

// A refused connection and a name under .invalid end the call at once,
// as ErrUnreachable naming the URL and why; a connection cut short may
// pass and is retried. Only loopback is dialled: .invalid is answered
// without a DNS query (RFC 6761).
func TestUnreachableIsNotRetried(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	var cuts int
	var mu sync.Mutex
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cuts++
		mu.Unlock()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // no answer at all
		}
	}))
	defer cut.Close()
	for _, tc := range []struct {
		name, url, reason string
		requests          int64
		unreachable       bool
	}{
		{"refused", "http://" + refused + "/services/v2/", "connection refused: nothing listens at " + refused, 1, true},
		{"invalid name", "https://user:pw@cc.example.INVALID./services/v2/", "the host cc.example.INVALID. does not resolve", 1, true},
		{"connection cut", cut.URL + "/services/v2/", "", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := digicerttest.NewClock(start)
			c, err := digicert.New(tc.url, testKey, digicert.WithClock(clock.Now, clock.Sleep),
				digicert.WithRetry(3, time.Second, time.Second), digicert.WithLimits())
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.OrderInfo(context.Background(), 1)
			noKey(t, err)
			if n := c.Stats().Requests; n != tc.requests {
				t.Errorf("%d requests, want %d: %v", n, tc.requests, err)
			}
			var ue *digicert.UnreachableError
			if errors.Is(err, digicert.ErrUnreachable) != tc.unreachable || errors.As(err, &ue) != tc.unreachable {
				t.Fatalf("err = %v; unreachable: want %v", err, tc.unreachable)
			}
			if !tc.unreachable {
				return
			}
			if ue.Reason != tc.reason || strings.Contains(ue.URL, "pw") || !strings.Contains(err.Error(), "CertCentral at "+ue.URL+" cannot be reached: "+tc.reason) {
				t.Errorf("err = %v (URL %q, reason %q), want reason %q", err, ue.URL, ue.Reason, tc.reason)
			}
		})
	}
	if cuts != 3 {
		t.Errorf("the cut connection was asked %d times, want 3", cuts)
	}
}

// TestNoRedirect: the key header must not follow a redirect elsewhere.
func TestNoRedirect(t *testing.T) {
	t.Parallel()
	var leaked sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.Header.Get("X-DC-DEVKEY"); k != "" {
			leaked.Store(k, true)
		}
		w.Write([]byte(`{"id":1,"certificate":{}}`))
	}))
	defer other.Close()
	ts := httptest.NewServer(http.RedirectHandler(other.URL+"/services/v2/order/certificate/1", http.StatusFound))
	defer ts.Close()
	c, err := digicert.New(ts.URL+"/services/v2/", testKey, digicert.WithLimits())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.OrderInfo(context.Background(), 1)
	var apiErr *digicert.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusFound {
		t.Errorf("redirect: err = %v, want an APIError with status 302", err)
	}
	leaked.Range(func(k, _ any) bool {
		t.Error("the key was sent to the redirect's target")
		return false
	})
}

func TestSlowAnswerHitsTheDeadline(t *testing.T) {
	t.Parallel()
	sim := digicerttest.NewServer(digicerttest.Options{APIKey: testKey})
	ts := httptest.NewServer(sim)
	defer ts.Close()
	sim.SetDelay(3 * time.Second)
	c, err := digicert.New(ts.URL+digicerttest.BasePath, testKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err = c.OrderInfo(ctx, 100001)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("the call took %v past a 150ms deadline", took)
	}
	if n := c.Stats().Requests; n != 1 {
		t.Errorf("%d requests: a call whose context ended must not retry", n)
	}
	noKey(t, err)
}

// A host the DNS says does not exist fails at once, naming the host; a DNS
// timeout is retried. The resolver is simulated in the dialer: tests talk
// to loopback only (and the client answers .invalid itself).
func TestNoSuchHostIsNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		dnsErr   net.DNSError
		attempts int
	}{
		{"no such host", net.DNSError{Err: "no such host", Name: "cc.example.com", IsNotFound: true}, 1},
		{"DNS timeout", net.DNSError{Err: "i/o timeout", Name: "cc.example.com", IsTimeout: true}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dials := 0
			hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials++
				err := tc.dnsErr
				return nil, &net.OpError{Op: "dial", Net: network, Err: &err}
			}}}
			clock := digicerttest.NewClock(start)
			c, err := digicert.New("https://cc.example.com/services/v2/", testKey, digicert.WithHTTPClient(hc),
				digicert.WithClock(clock.Now, clock.Sleep), digicert.WithRetry(3, time.Second, time.Second))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.OrderInfo(context.Background(), 1)
			if err == nil || !strings.Contains(err.Error(), "cc.example.com") {
				t.Fatalf("err = %v, want the host named", err)
			}
			if dials != tc.attempts {
				t.Errorf("%d attempts, want %d: %v", dials, tc.attempts, err)
			}
			if tc.attempts == 1 && !strings.Contains(err.Error(), "the host cc.example.com does not resolve") {
				t.Errorf("err = %v", err)
			}
			noKey(t, err)
		})
	}
}
