package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultServer answers each request with the next of its handlers (the
// last one repeats) and counts the requests.
type faultServer struct {
	*httptest.Server
	calls atomic.Int32
}

func newFaultServer(t *testing.T, handlers ...http.HandlerFunc) *faultServer {
	f := &faultServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(f.calls.Add(1))
		handlers[min(n, len(handlers))-1](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func answer(status int, contentType, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
}

func jsonAnswer(status int, body string, headers ...string) http.HandlerFunc {
	return answer(status, "application/json", body, headers...)
}

var authenticated = jsonAnswer(200, `{"message":"Authenticated"}`)

// dropConnection closes the connection without an answer.
func dropConnection(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// newTestClient records the waits instead of sleeping.
func newTestClient(t *testing.T, url string, opts ...Option) (*Client, *[]time.Duration) {
	c, err := New(url+"/api/digicert/", "alice", "cok_000000000000_secret", opts...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, &waits
}

func TestFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		handlers  []http.HandlerFunc
		wantCalls int32
		check     func(t *testing.T, err error, waits []time.Duration)
	}{
		{"429 with Retry-After, then success",
			[]http.HandlerFunc{jsonAnswer(429, `{"error_message":"Error(140) rate limit is exceeded."}`, "Retry-After", "3"), authenticated}, 2,
			func(t *testing.T, err error, waits []time.Duration) {
				if err != nil || len(waits) != 1 || waits[0] != 3*time.Second {
					t.Fatalf("err %v, waits %v; want success after waiting 3s", err, waits)
				}
			}},
		{"429 forever: retries stop, rate limited",
			[]http.HandlerFunc{jsonAnswer(429, `{"error_message":"Error(140) rate limit is exceeded."}`, "Retry-After", "1")}, 4,
			func(t *testing.T, err error, waits []time.Duration) {
				if !errors.Is(err, ErrRateLimited) || len(waits) != 3 {
					t.Fatalf("err %v, waits %v", err, waits)
				}
			}},
		{"503 twice, then success",
			[]http.HandlerFunc{jsonAnswer(503, `{"error_message":"Error(150) service is unavailable."}`),
				jsonAnswer(503, `{"error_message":"Error(150) service is unavailable."}`), authenticated}, 3,
			func(t *testing.T, err error, waits []time.Duration) {
				if err != nil || len(waits) != 2 {
					t.Fatalf("err %v, waits %v", err, waits)
				}
				// Exponential backoff with jitter: each wait within [d/2, d].
				for i, w := range waits {
					d := 10 * time.Millisecond << i
					if w < d/2 || w > d {
						t.Errorf("wait %d = %v, want within [%v, %v]", i, w, d/2, d)
					}
				}
			}},
		{"503 forever: retries stop",
			[]http.HandlerFunc{answer(503, "text/plain", "upstream down")}, 4,
			func(t *testing.T, err error, waits []time.Duration) {
				var he *HTTPError
				if !errors.As(err, &he) || he.Status != 503 {
					t.Fatalf("err %v, want HTTPError 503", err)
				}
			}},
		{"HTML error page from a proxy",
			[]http.HandlerFunc{answer(502, "text/html", "<html><body>Bad Gateway</body></html>"), authenticated}, 2,
			func(t *testing.T, err error, waits []time.Duration) {
				if err != nil {
					t.Fatal(err)
				}
			}},
		{"HTML page with 200: not retried",
			[]http.HandlerFunc{answer(200, "text/html", "<html>captive portal</html>")}, 1,
			func(t *testing.T, err error, waits []time.Duration) {
				var he *HTTPError
				if !errors.As(err, &he) || he.Status != 200 || he.Body != "<html>captive portal</html>" {
					t.Fatalf("err %v", err)
				}
			}},
		{"garbage body: not retried",
			[]http.HandlerFunc{jsonAnswer(200, `{"message":"Auth`)}, 1,
			func(t *testing.T, err error, waits []time.Duration) {
				var he *HTTPError
				if !errors.As(err, &he) {
					t.Fatalf("err %v", err)
				}
			}},
		{"error inside a 200: an answer, not retried",
			[]http.HandlerFunc{jsonAnswer(200, `{"error_message":"Error(7) AccessName is failed."}`)}, 1,
			func(t *testing.T, err error, waits []time.Duration) {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Number != 7 || ae.Text != "AccessName is failed." || !errors.Is(err, ErrCredentialsRejected) {
					t.Fatalf("err %v", err)
				}
			}},
		{"unavailable inside a 200: retried",
			[]http.HandlerFunc{jsonAnswer(200, `{"error_message":"Error(150) service is unavailable."}`), authenticated}, 2,
			func(t *testing.T, err error, waits []time.Duration) {
				if err != nil {
					t.Fatal(err)
				}
			}},
		{"credentials rejected: never retried",
			[]http.HandlerFunc{jsonAnswer(401, `{"error_message":"Error(111) AccessName is failed."}`)}, 1,
			func(t *testing.T, err error, waits []time.Duration) {
				if !errors.Is(err, ErrCredentialsRejected) || errors.Is(err, ErrNoSuchOrder) || len(waits) != 0 {
					t.Fatalf("err %v, waits %v", err, waits)
				}
			}},
		{"dropped connection, then success",
			[]http.HandlerFunc{dropConnection, authenticated}, 2,
			func(t *testing.T, err error, waits []time.Duration) {
				if err != nil {
					t.Fatal(err)
				}
			}},
		{"dropped connection forever: a network error",
			[]http.HandlerFunc{dropConnection}, 4,
			func(t *testing.T, err error, waits []time.Duration) {
				var ae *APIError
				var he *HTTPError
				if err == nil || errors.As(err, &ae) || errors.As(err, &he) {
					t.Fatalf("err %v, want a network error", err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFaultServer(t, tc.handlers...)
			c, waits := newTestClient(t, srv.URL, WithBackoff(10*time.Millisecond, time.Minute))
			err := c.Auth(context.Background())
			tc.check(t, err, *waits)
			if got := srv.calls.Load(); got != tc.wantCalls {
				t.Errorf("%d requests, want %d", got, tc.wantCalls)
			}
		})
	}
}

// A slow answer ends at the deadline, and no retry follows.
func TestSlowAnswer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newFaultServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c, waits := newTestClient(t, srv.URL, WithTimeout(100*time.Millisecond))
	start := time.Now()
	err := c.Auth(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) || len(*waits) != 0 || srv.calls.Load() != 1 {
		t.Fatalf("err %v after %v, waits %v, calls %d", err, time.Since(start), *waits, srv.calls.Load())
	}
}

// A Retry-After longer than the time left, or than the longest wait the
// client may make, ends the call at once, with the reason.
func TestRetryAfterTooLong(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]Option{{WithTimeout(time.Second)}, {WithTimeout(time.Hour), WithBackoff(time.Millisecond, 10*time.Second)}} {
		srv := newFaultServer(t, jsonAnswer(429, `{"error_message":"Error(140) rate limit is exceeded."}`, "Retry-After", "30"))
		c, waits := newTestClient(t, srv.URL, opts...)
		err := c.Auth(context.Background())
		if !errors.Is(err, ErrRateLimited) || len(*waits) != 0 || srv.calls.Load() != 1 {
			t.Fatalf("err %v, waits %v, calls %d", err, *waits, srv.calls.Load())
		}
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range [][3]string{
		{"ftp://host/api/x/", "a", "k"}, {"host/api/x/", "a", "k"}, {"http://", "a", "k"},
		{"http://h/api/x/", "", "k"}, {"http://h/api/x/", "a", ""},
	} {
		if _, err := New(tc[0], tc[1], tc[2]); err == nil {
			t.Errorf("New%q accepted", tc)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]time.Duration{
		"": 0, "2": 2 * time.Second, "-1": 0, "soon": 0, "3600": time.Hour,
		time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat): 0,
	} {
		if got := retryAfter(h); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", h, got, want)
		}
	}
}

// renewals answers RenewCheck from next (0: not renewed) and OrderInfo with a bare order.
func renewals(next func(id int64) int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Action  string `json:"action"`
			OrderID int64  `json:"orderId"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if req.Action == "OrderInfo" {
			fmt.Fprintf(w, `{"OrderId":%d,"certificate":{"valid_till":"2030-01-01"}}`, req.OrderID)
			return
		}
		if n := next(req.OrderID); n != 0 {
			fmt.Fprintf(w, `{"orderId":%d,"renewed_orderId":"%d"}`, req.OrderID, n)
			return
		}
		w.WriteHeader(404)
		io.WriteString(w, `{"error_message":"Error(9) orderId is failed."}`)
	}
}

func TestCurrentStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A service with its own error numbers: "orderId is failed." ends the chain.
	srv := newFaultServer(t, renewals(func(id int64) int64 {
		if id < 3 {
			return id + 1
		}
		return 0
	}))
	c, _ := newTestClient(t, srv.URL)
	cur, err := c.Current(ctx, 1)
	if err != nil || !slices.Equal(cur.Chain, []int64{1, 2, 3}) || cur.Order.OrderID != 3 {
		t.Fatalf("Current = %+v, %v", cur, err)
	}

	cycle := newFaultServer(t, renewals(func(id int64) int64 { return 3 - id })) // 1 -> 2 -> 1
	c, _ = newTestClient(t, cycle.URL)
	if _, err := c.Current(ctx, 1); !errors.Is(err, ErrBadChain) || !strings.Contains(err.Error(), "loops back") {
		t.Fatalf("cycle: %v", err)
	}

	// An OrderInfo answer about another order than the one asked for is
	// never taken for the newest order.
	other := newFaultServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"OrderInfo"`) {
			io.WriteString(w, `{"OrderId":99999,"certificate":{"valid_till":"2030-01-01"}}`)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		renewals(func(id int64) int64 { return map[int64]int64{1: 2}[id] })(w, r)
	})
	c, _ = newTestClient(t, other.URL)
	if cur, err := c.Current(ctx, 1); !errors.Is(err, ErrBadChain) || !strings.Contains(err.Error(), "answered order 99999") {
		t.Fatalf("an answer about another order: %+v, %v", cur, err)
	}

	endless := newFaultServer(t, renewals(func(id int64) int64 { return id + 1 }))
	c, _ = newTestClient(t, endless.URL, WithMaxChain(5))
	if _, err := c.Current(ctx, 1); !errors.Is(err, ErrBadChain) || !strings.Contains(err.Error(), "longer than 5") {
		t.Fatalf("endless chain: %v", err)
	}
	if n := endless.calls.Load(); n > 7 {
		t.Fatalf("%d requests for a chain limit of 5", n)
	}
}

// The wait the service asked for travels with the error, for the caller to
// tell its user; without a Retry-After it is 0.
func TestRetryAfterInError(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]time.Duration{"900": 15 * time.Minute, "": 0} {
		srv := newFaultServer(t, jsonAnswer(429, `{"error_message":"Error(140) rate limit is exceeded."}`, "Retry-After", header))
		c, _ := newTestClient(t, srv.URL, WithRetries(0))
		err := c.Auth(context.Background())
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, ErrRateLimited) || apiErr.RetryAfter != want {
			t.Errorf("Retry-After %q: err %v, want an APIError with RetryAfter %v", header, err, want)
		}
	}
}

// A chain that names an order the service does not find says which one.
func TestCurrentMissingNext(t *testing.T) {
	t.Parallel()
	srv := newFaultServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Action  string `json:"action"`
			OrderID int64  `json:"orderId"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case req.Action == "RenewCheck" && req.OrderID == 1:
			io.WriteString(w, `{"orderId":1,"renewed_orderId":2}`)
		default: // order 2 is not there at all
			w.WriteHeader(404)
			io.WriteString(w, `{"error_message":"Error(131) orderId is failed."}`)
		}
	})
	c, _ := newTestClient(t, srv.URL)
	_, err := c.Current(context.Background(), 1)
	if !errors.Is(err, ErrNoSuchOrder) || !strings.Contains(err.Error(), "order 1 was renewed by order 2, which is missing") {
		t.Fatalf("Current: %v", err)
	}
}
