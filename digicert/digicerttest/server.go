// Package digicerttest is a CertCentral simulator: an http.Handler serving
// the Services API v2 endpoints a sync uses (List orders, Order info, Status
// change list) from an in-memory dataset, in the shapes DigiCert documents,
// and the account's webhook (webhook.go), which POSTs CertCentral's events
// to a loopback endpoint as the dataset's orders change.
//
//	sim := digicerttest.NewServer(digicerttest.Options{APIKey: "k"})
//	ts := httptest.NewServer(sim)
//	c, _ := digicert.New(ts.URL+digicerttest.BasePath, "k")
//
// It also misbehaves on demand: a wrong key, bursts of 429, 5xx answers,
// slow answers; and it enforces DigiCert's per-key rate limits, recording
// every request that broke one (Violations), so a test can assert a client
// never did. Methods change the dataset the way CertCentral would: add an
// order, issue it, change its status, renew it; a running simulator takes
// the same changes over HTTP at ControlPath (control.go).
package digicerttest

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/certorder/certorder/digicert"
)

// BasePath is where the simulator serves the Services API v2; a client's
// base URL is the server's URL followed by BasePath.
const BasePath = "/services/v2/"

// Endpoint names, the keys of Requests.
const (
	EndpointListOrders    = "List orders"
	EndpointOrderInfo     = "Order info"
	EndpointStatusChanges = "Status change list"
	EndpointWebhook       = "Webhooks" // any of the webhook endpoints (webhook.go)
	EndpointOther         = "other"
)

// Options configures a Server.
type Options struct {
	// APIKey is the one key accepted in the X-DC-DEVKEY header. Empty
	// accepts no key at all.
	APIKey string
	// Clock is the simulator's now; nil means the real clock.
	Clock *Clock
	// Limits are the per-key limits enforced; nil means
	// digicert.DocumentedLimits(). NoLimits turns enforcement off.
	Limits   []digicert.Limit
	NoLimits bool
	// WebhookClient sends the webhook's events (a test's, trusting its own
	// TLS certificate); nil: a client that connects to loopback only. The
	// endpoint must be on loopback either way.
	WebhookClient *http.Client
	// OnChange, if set, is told of each change Simulate makes (the
	// control endpoint's included), after it is made.
	OnChange func(Change)
}

// Violation is a request that arrived when a rate limit was already full:
// DigiCert answers it 429, and so does the simulator.
type Violation struct {
	At       time.Time
	Limit    digicert.Limit
	InWindow int // requests already in the window when this one came
}

// Server is the simulator. It is safe for concurrent use.
type Server struct {
	now func() time.Time
	mux *http.ServeMux

	mu             sync.Mutex
	key            string
	wrongKeyStatus int
	limits         []digicert.Limit
	seen           []time.Time // requests counted against the limits
	violations     []Violation
	failures       []int // statuses of injected failures, next first
	delay          time.Duration
	requests       map[string]int
	hostile        Hostile

	orders     map[int64]*order
	ids        []int64 // ascending
	byCertKey  map[string]int64
	containers map[int64]string
	nextOrder  int64
	nextCert   int64

	webhook       *webhookState // nil: the account has none
	nextWebhook   int64
	webhookClient *http.Client
	outbox        []sentEvent // events for the sender
	sending       bool        // the sender runs
	eventLog      []delivery

	onChange func(Change)
}

// NewServer returns a simulator with an empty dataset.
func NewServer(opts Options) *Server {
	s := &Server{
		now:            time.Now,
		key:            opts.APIKey,
		wrongKeyStatus: http.StatusUnauthorized,
		limits:         digicert.DocumentedLimits(),
		requests:       map[string]int{},
		orders:         map[int64]*order{},
		byCertKey:      map[string]int64{},
		containers:     map[int64]string{},
		nextOrder:      100001,
		nextCert:       500001,
		onChange:       opts.OnChange,
	}
	if opts.Clock != nil {
		s.now = opts.Clock.Now
	}
	if opts.Limits != nil {
		s.limits = slices.Clone(opts.Limits)
	}
	if opts.NoLimits {
		s.limits = nil
	}
	if s.webhookClient = opts.WebhookClient; s.webhookClient == nil {
		s.webhookClient = loopbackClient()
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET "+BasePath+"order/certificate", s.listOrders)
	s.mux.HandleFunc("GET "+BasePath+"order/certificate/status-changes", s.statusChanges)
	s.mux.HandleFunc("GET "+BasePath+"order/certificate/{id}", s.orderInfo)
	s.registerWebhooks(s.mux)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not_found|route", "The endpoint does not exist.")
	})
	return s
}

// ServeHTTP answers one request: after the configured delay, it checks the
// key, then the rate limits, then any injected failure, then serves the
// endpoint. Requests to ControlPath (control.go) skip all of that.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, ControlPath) {
		s.serveControl(w, r) // the simulator's own: no key, no limits, no misbehaving
		return
	}
	s.mu.Lock()
	s.requests[endpointOf(r)]++
	delay := s.delay
	s.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.Header.Get("X-DC-DEVKEY")
	if s.key == "" || subtle.ConstantTimeCompare([]byte(key), []byte(s.key)) != 1 {
		if s.wrongKeyStatus == http.StatusForbidden {
			writeError(w, http.StatusForbidden, "access_denied|missing_permission",
				"The API key does not have permission to carry out the request.")
			return
		}
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "The API key is missing or invalid.")
		return
	}
	now := s.now()
	if v := s.overLimit(now); v != nil {
		s.violations = append(s.violations, *v)
		writeError(w, http.StatusTooManyRequests, "request_limit_exceeded",
			"Service unavailable, please limit request volume")
		return
	}
	if len(s.limits) > 0 {
		s.seen = append(s.seen, now)
	}
	if len(s.failures) > 0 {
		status := s.failures[0]
		s.failures = s.failures[1:]
		if status == http.StatusTooManyRequests {
			writeError(w, status, "request_limit_exceeded", s.errorMessage("Service unavailable, please limit request volume"))
		} else {
			writeError(w, status, "server_error", s.errorMessage("The service could not complete the request."))
		}
		return
	}
	if s.serveHostile(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// overLimit returns the violation a request at now would be, if a limit's
// rolling window (now-Per, now] already holds Requests requests.
func (s *Server) overLimit(now time.Time) *Violation {
	if len(s.limits) == 0 {
		return nil
	}
	var longest time.Duration
	for _, l := range s.limits {
		longest = max(longest, l.Per)
	}
	s.seen = slices.DeleteFunc(s.seen, func(t time.Time) bool { return !t.After(now.Add(-longest)) })
	for _, l := range s.limits {
		n := 0
		for _, t := range s.seen {
			if t.After(now.Add(-l.Per)) && !t.After(now) {
				n++
			}
		}
		if n >= l.Requests {
			return &Violation{At: now, Limit: l, InWindow: n}
		}
	}
	return nil
}

func endpointOf(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, BasePath+"webhook") {
		return EndpointWebhook
	}
	p, ok := strings.CutPrefix(r.URL.Path, BasePath+"order/certificate")
	switch {
	case !ok:
		return EndpointOther
	case p == "" || p == "/":
		return EndpointListOrders
	case p == "/status-changes":
		return EndpointStatusChanges
	case strings.Count(p, "/") == 1:
		return EndpointOrderInfo
	}
	return EndpointOther
}

// SetAPIKey changes the accepted key: a client holding the old one now has
// a wrong key.
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// SetWrongKeyStatus chooses the answer to a wrong key: 401 (default,
// invalid_api_key) or 403 (access_denied|missing_permission).
func (s *Server) SetWrongKeyStatus(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wrongKeyStatus = status
}

// FailNext makes the next n requests with the right key answer status:
// 429 with DigiCert's rate-limit body, anything else with a generic error
// body. Injected failures are not violations.
func (s *Server) FailNext(n int, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, status)
	}
}

// SetDelay makes every answer wait d (real time) first; 0 turns it off.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Violations returns the requests that arrived over a rate limit.
func (s *Server) Violations() []Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations)
}

// Requests returns how many requests each endpoint received, whatever the
// answer.
func (s *Server) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.requests))
	for k, v := range s.requests {
		out[k] = v
	}
	return out
}

// ResetCounts zeroes Requests and Violations.
func (s *Server) ResetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = map[string]int{}
	s.violations = nil
}

// writeError writes DigiCert's documented error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	type item struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	writeJSON(w, status, struct {
		Errors []item `json:"errors"`
	}{[]item{{code, message}}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"errors":[{"code":"server_error","message":"encoding failed"}]}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
