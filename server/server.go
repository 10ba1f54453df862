// Package server is the HTTP side of certorder: the one POST endpoint of the
// interface, its three actions and its failures.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/server/web"
)

// Config is what New needs besides the store.
type Config struct {
	CASegment    string           // path segment of the endpoint: /api/<CASegment>/
	ErrorsAs200  bool             // answer failures with status 200, for clients that expect it
	MaxBodyBytes int64            // request body limit; 0 means DefaultMaxBodyBytes
	StoreTimeout time.Duration    // bound on the store's work for one request; 0 means DefaultStoreTimeout
	Now          func() time.Time // clock for days_remaining and the limits; nil means time.Now
	Logger       *slog.Logger     // access and error log; nil means none
	NoAccessLog  bool             // log errors only, not one line per request

	Web            bool                  // serve the member web page at /
	Limits         Limits                // abuse limits; the zero value has none (serve uses DefaultLimits)
	AuditRetention time.Duration         // keep an audit trail of calls this long; 0: no audit trail
	Metrics        prometheus.Registerer // where the metrics are registered; nil: nowhere
}

// DefaultMaxBodyBytes bounds a request body. A real request is well under 1 KiB.
const DefaultMaxBodyBytes = 16 << 10

// DefaultStoreTimeout bounds the store's work for one request, so that a
// database that stops answering gives a quick 503 rather than a hung client.
const DefaultStoreTimeout = 5 * time.Second

var segmentPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// ValidSegment checks a CA path segment.
func ValidSegment(seg string) error {
	if !segmentPattern.MatchString(seg) || seg == "." || seg == ".." {
		return fmt.Errorf("CA segment %q: use letters, digits and . _ -", seg)
	}
	return nil
}

// Server is the service's HTTP handler. Close it after the http.Server
// has shut down, to write the last audit entries.
type Server struct {
	store   certorder.Store
	cfg     Config
	actions map[string]action
	mux     *http.ServeMux
	metrics *metrics
	audit   *auditor // nil without an audit trail
	closed  sync.Once

	memberRate, ipRate *buckets  // nil when off
	ipFails, nameFails *failures // nil when off
	inFlight           chan struct{}
}

// action answers one authenticated request.
type action struct {
	needsOrder bool // the request names an order in orderId
	answer     func(c *call) ([]byte, *failure)
}

// call is an authenticated request.
type call struct {
	cred    certorder.Credential
	orderID int64            // 0 when orderId is absent or not a valid order number
	order   *certorder.Order // the order orderID names, of any member; nil if none
}

// failure is an answer's error number, HTTP status and, for refusals that
// pass, when to try again.
type failure struct {
	num        certorder.ErrorNumber
	status     int
	retryAfter time.Duration
}

func fail(num certorder.ErrorNumber) *failure { return &failure{num: num, status: num.HTTPStatus()} }

// New returns the service's handler.
func New(store certorder.Store, cfg Config) (*Server, error) {
	if err := ValidSegment(cfg.CASegment); err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := cfg.Limits
	s := &Server{
		store: store, cfg: cfg,
		metrics:    newMetrics(cfg.Metrics),
		memberRate: newBuckets(l.MemberRate, l.MemberBurst),
		ipRate:     newBuckets(l.IPRate, l.IPBurst),
		ipFails:    newFailures(l),
		nameFails:  newFailures(l),
	}
	if l.MaxInFlight > 0 {
		s.inFlight = make(chan struct{}, l.MaxInFlight)
	}
	if cfg.AuditRetention > 0 {
		s.audit = newAuditor(store, cfg.AuditRetention, cfg.Now, s.metrics.auditDropped, cfg.Logger)
	}
	// The actions of the interface, section 4.
	s.actions = map[string]action{
		"Auth":       {answer: auth},
		"OrderInfo":  {needsOrder: true, answer: s.orderInfo},
		"RenewCheck": {needsOrder: true, answer: renewCheck},
	}
	s.mux = http.NewServeMux()
	api := s.limitInFlight(http.HandlerFunc(s.handleAPI))
	s.mux.Handle("/api/"+cfg.CASegment+"/{$}", api)
	s.mux.Handle("/api/"+cfg.CASegment, api) // without the slash: no redirect that would turn a POST into a GET
	s.mux.Handle("/healthz", s.Healthz())
	s.mux.Handle("/readyz", s.Readyz())
	unknownPath := func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, r, s.newEvent(r), nil, fail(certorder.NumUnknownPath))
	}
	s.mux.HandleFunc("/api/", unknownPath) // a wrong CA segment gets JSON, web page or not
	if cfg.Web {
		page, err := web.New(store, web.Config{SignIn: s.signIn, Secure: s.secure, Now: cfg.Now, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		s.mux.Handle("/", page)
	} else {
		s.mux.HandleFunc("/", unknownPath)
	}
	return s, nil
}

// ServeHTTP answers a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close writes the audit entries still queued. Call it once no request is
// being served.
func (s *Server) Close() {
	s.closed.Do(func() {
		if s.audit != nil {
			s.audit.close()
		}
	})
}

// Healthz answers 200 while the process runs.
func (s *Server) Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`+"\n"))
	})
}

// Readyz answers 200 when the store answers, 503 when it does not.
func (s *Server) Readyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
		defer cancel()
		if err := s.store.Ping(ctx); err != nil {
			s.cfg.Logger.Warn("not ready", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"store unavailable"}`+"\n"))
			return
		}
		writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`+"\n"))
	})
}

// limitInFlight answers a fast 503 when MaxInFlight requests are being served.
func (s *Server) limitInFlight(h http.Handler) http.Handler {
	if s.inFlight == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.inFlight <- struct{}{}:
			defer func() { <-s.inFlight }()
			h.ServeHTTP(w, r)
		default:
			s.metrics.limited.WithLabelValues("in_flight").Inc()
			f := fail(certorder.NumUnavailable)
			f.retryAfter = time.Second
			s.answer(w, r, s.newEvent(r), nil, f)
		}
	})
}

// event is what the access log and the audit trail say of one request. It
// never holds the key or the body.
type event struct {
	start   time.Time
	id      string // request ID, also sent back in X-Request-Id
	ip      string
	action  string // as sent, cut to 32 bytes
	name    string // AccessName as sent, cut to 64 bytes
	member  string // the authenticated member
	orderID int64
	api     bool // a request to the endpoint, which the audit trail keeps
}

func (s *Server) newEvent(r *http.Request) *event {
	return &event{start: time.Now(), id: fmt.Sprintf("%016x", rand.Uint64()), ip: clientIP(r, s.cfg.Limits.TrustedProxies)}
}

// refuse answers 429 for a limit, with the wait in Retry-After.
func (s *Server) refuse(limit string, wait time.Duration) *failure {
	s.metrics.limited.WithLabelValues(limit).Inc()
	f := fail(certorder.NumRateLimited)
	f.retryAfter = wait
	return f
}

// handleAPI answers the endpoint. Checks run in the order docs/API.md
// gives: method, limits, body, credentials, action, orderId, order. The
// credentials and the order are read together, in one store read.
func (s *Server) handleAPI(w http.ResponseWriter, r *http.Request) {
	ev := s.newEvent(r)
	ev.api = true
	f := s.serveAPI(w, r, ev)
	if f != nil {
		s.answer(w, r, ev, nil, f)
	}
}

// serveAPI answers a request, or returns the failure to answer.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, ev *event) *failure {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return fail(certorder.NumMethodNotAllowed)
	}
	now := s.cfg.Now()
	if ok, wait := s.ipRate.take(ev.ip, now); !ok {
		return s.refuse("ip", wait)
	}
	req, f := decodeRequest(w, r, s.cfg.MaxBodyBytes)
	if f != nil {
		return f
	}
	ev.action, ev.name = certorder.Cut(req.Action, 32), certorder.Cut(req.AccessName, 64)
	if f := s.lockedOut(ev.ip, req.AccessName, now); f != nil {
		return f
	}
	act, known := s.actions[req.Action]
	known = known && req.actionOK
	c := &call{}
	if known && act.needsOrder {
		c.orderID, _ = certorder.ParseOrderID(req.OrderID)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	c.cred, c.order, f = s.authenticate(ctx, req, c.orderID)
	if f != nil {
		if f.num == certorder.NumCredentialsFailed {
			s.authFailed(ev.ip, req.AccessName, now)
		}
		return f
	}
	ev.member, ev.orderID = c.cred.Member, c.orderID
	if ok, wait := s.memberRate.take(c.cred.Member, now); !ok {
		return s.refuse("member", wait)
	}
	if !known {
		return fail(certorder.NumUnknownAction)
	}
	body, f := act.answer(c)
	if f != nil {
		return f
	}
	s.answer(w, r, ev, body, nil)
	return nil
}

// lockedOut refuses an IP or an AccessName that failed authentication too often.
func (s *Server) lockedOut(ip, name string, now time.Time) *failure {
	for _, lock := range []struct {
		f   *failures
		key string
	}{{s.ipFails, ip}, {s.nameFails, name}} {
		if locked, wait := lock.f.locked(lock.key, now); locked {
			return s.refuse("auth_lockout", wait)
		}
	}
	return nil
}

// authFailed counts a failed authentication against the IP and the name.
func (s *Server) authFailed(ip, name string, now time.Time) {
	s.metrics.authFailures.Inc()
	s.ipFails.fail(ip, now)
	s.nameFails.fail(name, now)
}

// signIn checks the web page's sign-in with the API's limits and refusals.
func (s *Server) signIn(r *http.Request, name, key string) (certorder.Credential, error) {
	ip, now := clientIP(r, s.cfg.Limits.TrustedProxies), s.cfg.Now()
	if ok, wait := s.ipRate.take(ip, now); !ok {
		s.metrics.limited.WithLabelValues("ip").Inc()
		return certorder.Credential{}, &web.ThrottledError{Wait: wait}
	}
	if f := s.lockedOut(ip, name, now); f != nil {
		return certorder.Credential{}, &web.ThrottledError{Wait: f.retryAfter}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	req := request{AccessName: name, AccessKey: key, credsOK: name != "" && key != ""}
	cred, _, f := s.authenticate(ctx, req, 0)
	switch {
	case f == nil:
		return cred, nil
	case f.num == certorder.NumCredentialsFailed:
		s.authFailed(ip, name, now)
		return cred, web.ErrRefused
	case f.num == certorder.NumCredentialsMissing:
		return cred, web.ErrRefused
	}
	return cred, fmt.Errorf("sign-in: %w: error %d", certorder.ErrUnavailable, f.num)
}

// secure says whether the request came over TLS, directly or through a
// trusted proxy that says so.
func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || fromTrustedProxy(r, s.cfg.Limits.TrustedProxies) &&
		strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// authenticate checks AccessName and AccessKey and reads the order orderID
// (if not 0) in the same store read. Whatever is wrong (unknown member,
// wrong or revoked key, disabled member) the answer is the same.
func (s *Server) authenticate(ctx context.Context, req request, orderID int64) (certorder.Credential, *certorder.Order, *failure) {
	if !req.credsOK {
		return certorder.Credential{}, nil, fail(certorder.NumCredentialsMissing)
	}
	id, ok := certorder.KeyID(req.AccessKey)
	if !ok {
		certorder.HashKey(req.AccessKey) // the same work as a real check
		return certorder.Credential{}, nil, fail(certorder.NumCredentialsFailed)
	}
	cred, order, err := s.store.FindCredential(ctx, id, orderID)
	if errors.Is(err, certorder.ErrNotFound) {
		cred = certorder.Credential{} // Verify below fails, after the same work
	} else if err != nil {
		return cred, nil, s.storeFailure(err)
	}
	if !cred.Verify(req.AccessName, req.AccessKey) {
		return certorder.Credential{}, nil, fail(certorder.NumCredentialsFailed)
	}
	return cred, order, nil
}

func auth(*call) ([]byte, *failure) { return authenticatedBody, nil }

// ownOrder is the member's order the request names. Another member's order
// gets the same answer as one that does not exist.
func (c *call) ownOrder() (*certorder.Order, *failure) {
	switch {
	case c.orderID == 0:
		return nil, fail(certorder.NumBadOrderID)
	case c.order == nil || c.order.MemberID != c.cred.MemberID:
		return nil, fail(certorder.NumNoSuchOrder)
	}
	return c.order, nil
}

func (s *Server) orderInfo(c *call) ([]byte, *failure) {
	o, f := c.ownOrder()
	if f != nil {
		return nil, f
	}
	b := make([]byte, 0, len(o.Doc)+128)
	return append(o.AppendJSON(b, s.cfg.Now()), '\n'), nil
}

func renewCheck(c *call) ([]byte, *failure) {
	o, f := c.ownOrder()
	if f != nil {
		return nil, f
	}
	if o.RenewedBy == 0 {
		return nil, fail(certorder.NumNotRenewed)
	}
	return renewCheckBody(o.ID, o.RenewedBy), nil
}

// storeFailure logs a store error and turns it into an answer: 503 when the
// store cannot be reached (worth a retry), 500 otherwise.
func (s *Server) storeFailure(err error) *failure {
	s.metrics.storeErrors.Inc()
	s.cfg.Logger.Error("store error", "err", err)
	if errors.Is(err, certorder.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		return fail(certorder.NumUnavailable)
	}
	return fail(certorder.NumInternal)
}

// answer writes the body or the failure, and accounts for the request: the
// metrics, the access log line and the audit entry.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, ev *event, body []byte, f *failure) {
	status, num := http.StatusOK, certorder.ErrorNumber(0)
	if f != nil {
		num, status, body = f.num, f.status, failureBody(f.num)
		if f.retryAfter > 0 {
			w.Header().Set("Retry-After", retryAfter(f.retryAfter))
		}
	}
	w.Header().Set("X-Request-Id", ev.id)
	if s.cfg.ErrorsAs200 {
		writeJSON(w, http.StatusOK, body)
	} else {
		writeJSON(w, status, body)
	}
	latency := time.Since(ev.start)

	action := ev.action
	if _, known := s.actions[action]; !known {
		action = "other"
	}
	s.metrics.requests.WithLabelValues(action, outcomeNames[num]).Inc()
	s.metrics.latency.WithLabelValues(action).Observe(latency.Seconds())
	if s.audit != nil && ev.api {
		name := ev.member
		if name == "" {
			name = ev.name
		}
		s.audit.record(certorder.AuditEntry{Time: s.cfg.Now(), Member: name, Action: ev.action,
			OrderID: ev.orderID, Outcome: num, ClientIP: ev.ip})
	}
	if s.cfg.NoAccessLog {
		return
	}
	s.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("request_id", ev.id),
		slog.String("ip", ev.ip),
		slog.String("method", r.Method),
		slog.String("path", certorder.Cut(r.URL.Path, 128)),
		slog.String("action", ev.action),
		slog.String("member", ev.member),
		slog.Int64("order_id", ev.orderID),
		slog.Int("error", int(num)),
		slog.Int("status", status),
		slog.Duration("latency", latency),
	)
}
