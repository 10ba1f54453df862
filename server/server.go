// Package server is the HTTP side of certorder: the one POST endpoint of the
// interface (its protocol is package wire), the limits in front of it, the
// metrics, the audit trail, and the member web page (server/web) beside it.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/server/web"
	"github.com/certorder/certorder/wire"
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
	// SelfServiceKeysOff forbids every member to create or revoke its own
	// keys on the web page (serve --member-keys=false).
	SelfServiceKeysOff bool
	// PrivateWebhooks lets members add webhook endpoints on plain http
	// and private addresses on the web page (serve --webhook-allow-private).
	PrivateWebhooks bool
	// ACMEURLTemplate is shown on each order's page with the chain's
	// newest order in {orderId} (serve --acme-url-template); "" shows nothing.
	ACMEURLTemplate string
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

// Store is what the server needs of the store: each part goes to the part
// of the server that uses it.
type Store interface {
	certorder.CredentialStore // the API's one read per request
	certorder.AuditStore      // the audit trail's writer
	certorder.Pinger          // /readyz
	web.Store                 // the member web page
}

// Server is the service's HTTP handler. Close it after the http.Server
// has shut down, to write the last audit entries.
type Server struct {
	creds   certorder.CredentialStore
	cache   certorder.CredentialCache // the store's cache, nil if it has none
	ping    certorder.Pinger
	cfg     Config
	mux     *http.ServeMux
	metrics *metrics
	audit   *auditor // nil without an audit trail
	closed  sync.Once

	draining    atomic.Bool  // shutting down: answers close their connections, /readyz says 503
	lastRequest atomic.Int64 // when the last request arrived, in UnixNano

	endpoint           string    // the path of the endpoint, /api/<segment>/
	memberRate, ipRate *buckets  // nil when off
	ipFails, pairFails *failures // per IP, per IP and AccessName; nil when off
	perIP              *holds    // nil when off
	inFlight           chan struct{}
}

// New returns the service's handler.
func New(store Store, cfg Config) (*Server, error) {
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
		creds: store, ping: store, cfg: cfg,
		metrics:    newMetrics(cfg.Metrics),
		memberRate: newBuckets(l.MemberRate, l.MemberBurst),
		ipRate:     newBuckets(l.IPRate, l.IPBurst),
		ipFails:    newFailures(l.AuthFailuresPerIP, l),
		pairFails:  newFailures(l.AuthFailures, l),
		perIP:      newHolds(l.MaxPerIP),
		endpoint:   "/api/" + cfg.CASegment + "/",
	}
	if l.MaxInFlight > 0 {
		s.inFlight = make(chan struct{}, l.MaxInFlight)
	}
	s.cache, _ = store.(certorder.CredentialCache)
	if cfg.AuditRetention > 0 {
		s.audit = newAuditor(store, cfg.AuditRetention, cfg.Now, s.metrics.auditDropped, cfg.Logger)
	}
	s.mux = http.NewServeMux()
	s.mux.Handle("/healthz", s.Healthz())
	s.mux.Handle("/readyz", s.Readyz())
	unknownPath := func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, r, s.newEvent(r), nil, wire.Fail(wire.UnknownPath))
	}
	if cfg.Web {
		wc := web.Config{SignIn: s.signIn, Secure: s.secure, Now: cfg.Now, Logger: cfg.Logger, StoreTimeout: cfg.StoreTimeout,
			ClientIP:           func(r *http.Request) string { return clientIP(r, cfg.Limits.TrustedProxies) },
			SelfServiceKeysOff: cfg.SelfServiceKeysOff, PrivateWebhooks: cfg.PrivateWebhooks,
			ACMEURLTemplate: cfg.ACMEURLTemplate}
		if s.audit != nil {
			wc.Audit = s.audit.record // sign-ins and key changes, beside the API's calls
		}
		page, err := web.New(store, wc)
		if err != nil {
			return nil, err
		}
		s.mux.Handle("/", page)
	} else {
		s.mux.HandleFunc("/", unknownPath)
	}
	return s, nil
}

// ServeHTTP answers a request. The endpoint answers at /api/<segment>/ and
// at /api/<segment> (a redirect would turn a POST into a GET), written
// literally; any other path that is, or cleans or decodes to, /api or
// below, in any case, gets the JSON failure 102, never a redirect or the
// web page.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.lastRequest.Store(time.Now().UnixNano())
	if s.draining.Load() {
		w.Header().Set("Connection", "close")
	}
	switch p := r.URL.Path; {
	case (p == s.endpoint || p == s.endpoint[:len(s.endpoint)-1]) && r.URL.RawPath == "":
		// Only the literal path: RawPath is set when the path was written
		// with escapes that matter (/api%2Fdigicert%2F, /api/%64igicert/),
		// and such a request is not the endpoint's (below: 102).
		s.handleAPI(w, r)
	case isAPIPath(p):
		s.answer(w, r, s.newEvent(r), nil, wire.Fail(wire.UnknownPath))
	default:
		s.mux.ServeHTTP(w, r)
	}
}

// isAPIPath reports whether a path is /api or below once cleaned as a
// browser or a proxy might: slashes collapsed, dot segments resolved, any case.
func isAPIPath(p string) bool {
	c := strings.ToLower(path.Clean("/" + p))
	return c == "/api" || strings.HasPrefix(c, "/api/")
}

// Drain begins a graceful shutdown: from now on every answer closes its
// connection and /readyz answers 503, so that clients and load balancers
// move on while the requests already sent are still answered.
func (s *Server) Drain() { s.draining.Store(true) }

// Quiet reports how long it is since the last request arrived.
func (s *Server) Quiet() time.Duration { return time.Since(time.Unix(0, s.lastRequest.Load())) }

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
		if s.draining.Load() {
			writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"shutting down"}`+"\n"))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
		defer cancel()
		if err := s.ping.Ping(ctx); err != nil {
			s.cfg.Logger.Warn("not ready", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, []byte(`{"status":"store unavailable"}`+"\n"))
			return
		}
		writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`+"\n"))
	})
}

// takeSlot takes one of the MaxInFlight places, or says to come back.
func (s *Server) takeSlot() (release func(), f *wire.Failure) {
	if s.inFlight == nil {
		return func() {}, nil
	}
	select {
	case s.inFlight <- struct{}{}:
		return func() { <-s.inFlight }, nil
	default:
		s.metrics.limited.WithLabelValues("in_flight").Inc()
		f := wire.Fail(wire.Unavailable)
		f.RetryAfter = time.Second
		return nil, f
	}
}

// event is what the access log and the audit trail say of one request. It
// never holds the key or the body.
type event struct {
	start   time.Time
	id      string // request ID, also sent back in X-Request-Id
	ip      string
	limit   string // what the per-address limits count by: ip, or for IPv6 its /64 (limitKey)
	action  string // as sent, cut to 32 bytes
	name    string // AccessName as sent, cut to 64 bytes
	member  string // the authenticated member
	keyID   string // the key that authenticated the request
	orderID int64
	api     bool // a request to the endpoint, which the audit trail keeps
}

func (s *Server) newEvent(r *http.Request) *event {
	ip := clientIP(r, s.cfg.Limits.TrustedProxies)
	return &event{start: time.Now(), id: requestID(), ip: ip, limit: limitKey(ip)}
}

// requestID is 64 random bits in 16 hex digits, without fmt (a request's
// bookkeeping is on the hot path).
func requestID() string {
	const digits = "0123456789abcdef"
	var b [16]byte
	v := rand.Uint64()
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}

// refuse answers 429 for a limit, with the wait in Retry-After.
func (s *Server) refuse(limit string, wait time.Duration) *wire.Failure {
	s.metrics.limited.WithLabelValues(limit).Inc()
	f := wire.Fail(wire.RateLimited)
	f.RetryAfter = wait
	return f
}

// handleAPI answers the endpoint. Checks run in the order docs/API.md
// gives: method, the per-IP limits, body, the in-flight cap, lockout,
// credentials, action, orderId, order. Nothing that costs more than a map
// look-up happens before the per-IP limits, and a request takes one of the
// MaxInFlight places only once its whole body has arrived, so clients that
// send slowly cannot fill them. The credentials and the order are read
// together, in one store read.
func (s *Server) handleAPI(w http.ResponseWriter, r *http.Request) {
	ev := s.newEvent(r)
	ev.api = true
	f := s.serveAPI(w, r, ev)
	if f != nil {
		s.answer(w, r, ev, nil, f)
	}
}

// serveAPI answers a request, or returns the failure to answer.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, ev *event) *wire.Failure {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return wire.Fail(wire.MethodNotAllowed)
	}
	now := s.cfg.Now()
	if ok, wait := s.ipRate.take(ev.limit, now); !ok {
		return s.refuse("ip", wait)
	}
	if !s.perIP.take(ev.limit) {
		return s.refuse("ip_open", time.Second)
	}
	defer s.perIP.release(ev.limit)
	body, f := s.readBody(w, r)
	if f != nil {
		return f
	}
	release, f := s.takeSlot()
	if f != nil {
		putBody(body)
		return f
	}
	defer release()
	req, f := wire.DecodeRequest(body)
	if f != nil {
		putBody(body)
		return f
	}
	ev.action, ev.name = certorder.Cut(req.Action, 32), certorder.Cut(req.AccessName, 64)
	if f := s.lockedOut(ev.limit, req.AccessName, now); f != nil {
		return f
	}
	act, known := wire.Actions[req.Action]
	known = known && req.ActionOK
	c := &wire.Call{Now: now}
	if known && act.NeedsOrder {
		c.OrderID, _ = wire.ParseOrderID(req.OrderID)
	}
	req.OrderID = nil
	putBody(body) // everything the request said is now copied out of it
	c.Credential, c.Order, f = s.authenticate(r.Context(), req, c.OrderID)
	if f != nil {
		if f.Code == wire.CredentialsFailed {
			s.authFailed(ev.limit, req.AccessName, now)
		}
		return f
	}
	ev.member, ev.keyID, ev.orderID = c.Credential.Member, c.Credential.KeyID, c.OrderID
	if ok, wait := s.memberRate.take(c.Credential.Member, now); !ok {
		return s.refuse("member", wait)
	}
	if !known {
		return wire.Fail(wire.UnknownAction)
	}
	buf := answerPool.Get().(*[]byte)
	defer answerPool.Put(buf)
	c.Buf = (*buf)[:0]
	answer, f := act.Answer(r.Context(), c)
	if f != nil {
		return f
	}
	s.answer(w, r, ev, answer, nil)
	return nil
}

// answerPool holds buffers answers are built in; an answer is written
// before its buffer goes back.
var answerPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// readBody reads a request body of at most MaxBodyBytes within
// BodyTimeout, into a pooled buffer (give it back with putBody). A
// declared length over the limit is refused at once.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *wire.Failure) {
	tooLarge := &wire.Failure{Code: wire.MalformedRequest, Status: http.StatusRequestEntityTooLarge}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return nil, tooLarge
	}
	if d := s.cfg.Limits.BodyTimeout; d > 0 {
		// Not every ResponseWriter can (a test recorder): then the server's
		// read timeout is the bound.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), (*bodyPool.Get().(*[]byte))[:0])
	var maxErr *http.MaxBytesError
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &maxErr):
		putBody(body)
		return nil, tooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		putBody(body)
		s.metrics.limited.WithLabelValues("body_timeout").Inc()
		return nil, &wire.Failure{Code: wire.MalformedRequest, Status: http.StatusRequestTimeout}
	}
	putBody(body)
	return nil, wire.Fail(wire.MalformedRequest)
}

// bodyPool holds request body buffers: a body is read into one, decoded,
// and given back.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func putBody(b []byte) {
	if b != nil {
		bodyPool.Put(&b)
	}
}

// readAll is io.ReadAll into b.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// lockedOut refuses an IP, or an IP for an AccessName, that failed
// authentication too often. A name is never locked out as such: another
// address presenting it is not refused.
func (s *Server) lockedOut(ip, name string, now time.Time) *wire.Failure {
	if locked, wait := s.ipFails.locked(ip, now); locked {
		return s.refuse("auth_lockout", wait)
	}
	if s.pairFails == nil {
		return nil
	}
	if locked, wait := s.pairFails.locked(ip+"\x00"+name, now); locked {
		return s.refuse("auth_lockout", wait)
	}
	return nil
}

// authFailed counts a failed authentication against the IP, and the IP
// with the name.
func (s *Server) authFailed(ip, name string, now time.Time) {
	s.metrics.authFailures.Inc()
	s.ipFails.fail(ip, now)
	if s.pairFails != nil {
		s.pairFails.fail(ip+"\x00"+name, now)
	}
}

// signIn checks the web page's sign-in with the API's limits and refusals.
func (s *Server) signIn(r *http.Request, name, key string) (certorder.Credential, error) {
	ip, now := limitKey(clientIP(r, s.cfg.Limits.TrustedProxies)), s.cfg.Now()
	if ok, wait := s.ipRate.take(ip, now); !ok {
		s.metrics.limited.WithLabelValues("ip").Inc()
		return certorder.Credential{}, &web.ThrottledError{Wait: wait}
	}
	if f := s.lockedOut(ip, name, now); f != nil {
		return certorder.Credential{}, &web.ThrottledError{Wait: f.RetryAfter}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	req := wire.Request{AccessName: name, AccessKey: key, CredsOK: name != "" && key != ""}
	cred, _, f := s.authenticate(ctx, req, 0)
	switch {
	case f == nil:
		return cred, nil
	case f.Code == wire.CredentialsFailed:
		s.authFailed(ip, name, now)
		return cred, web.ErrRefused
	case f.Code == wire.CredentialsMissing:
		return cred, web.ErrRefused
	case f.Code == wire.Unavailable:
		return cred, fmt.Errorf("sign-in: %w", certorder.ErrUnavailable)
	}
	return cred, fmt.Errorf("sign-in: error %d", f.Code)
}

// secure says whether the request came over TLS, directly or through a
// trusted proxy that says so.
func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || fromTrustedProxy(r, s.cfg.Limits.TrustedProxies) &&
		strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// authenticate checks AccessName and AccessKey and reads the member's
// order orderID (if not 0) in the same store read: from the store's cache
// when it holds them, else from the store within StoreTimeout (the
// request's one timer, set only when the store is asked). Whatever is
// wrong (unknown member, wrong or revoked key, disabled member) the answer
// is the same.
func (s *Server) authenticate(ctx context.Context, req wire.Request, orderID int64) (certorder.Credential, *certorder.Order, *wire.Failure) {
	if !req.CredsOK {
		return certorder.Credential{}, nil, wire.Fail(wire.CredentialsMissing)
	}
	id, ok := certorder.KeyID(req.AccessKey)
	if !ok {
		certorder.HashKey(req.AccessKey) // the same work as a real check
		return certorder.Credential{}, nil, wire.Fail(wire.CredentialsFailed)
	}
	var cred certorder.Credential
	var order *certorder.Order
	hit := false
	if s.cache != nil {
		cred, order, hit = s.cache.CachedCredential(id, orderID)
	}
	if !hit {
		var err error
		ctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
		cred, order, err = s.creds.FindCredential(ctx, id, orderID)
		cancel()
		if errors.Is(err, certorder.ErrNotFound) {
			cred = certorder.Credential{} // Verify below fails, after the same work
		} else if err != nil {
			return cred, nil, s.storeFailure(err)
		}
	}
	if !cred.Verify(req.AccessName, req.AccessKey) {
		return certorder.Credential{}, nil, wire.Fail(wire.CredentialsFailed)
	}
	return cred, order, nil
}

// storeFailure logs a store error and turns it into an answer: 503 when the
// store cannot be reached (worth a retry), 500 otherwise.
func (s *Server) storeFailure(err error) *wire.Failure {
	s.metrics.storeErrors.Inc()
	s.cfg.Logger.Error("store error", "err", err)
	if errors.Is(err, certorder.ErrUnavailable) {
		return wire.Fail(wire.Unavailable)
	}
	return wire.Fail(wire.Internal)
}

// answer writes the body or the failure, and accounts for the request: the
// metrics, the access log line and the audit entry.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, ev *event, body []byte, f *wire.Failure) {
	status, code := http.StatusOK, wire.Code(0)
	if f != nil {
		code, status, body = f.Code, f.Status, wire.AppendFailure(nil, f.Code)
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", retryAfter(f.RetryAfter))
		}
	}
	w.Header()["X-Request-Id"] = []string{ev.id}
	if s.cfg.ErrorsAs200 {
		writeJSON(w, http.StatusOK, body)
	} else {
		writeJSON(w, status, body)
	}
	latency := time.Since(ev.start)

	s.metrics.observe(ev.action, code, latency)
	if s.audit != nil && ev.api {
		name := ev.member
		if name == "" {
			name = ev.name
		}
		switch {
		case ev.member == "" && code != wire.CredentialsMissing && code != wire.CredentialsFailed:
			// Refused before authentication: counted, not one entry each.
			s.audit.refuse(certorder.AuditEntry{Time: s.cfg.Now(), Outcome: int(code), ClientIP: ev.ip})
		case code == wire.CredentialsMissing || code == wire.CredentialsFailed:
			// Credentials refused: counted per member named and interval.
			s.audit.refuseCredentials(certorder.AuditEntry{Time: s.cfg.Now(), Member: name, KeyID: ev.keyID, Action: ev.action,
				OrderID: ev.orderID, Outcome: int(code), ClientIP: ev.ip})
		default:
			s.audit.record(certorder.AuditEntry{Time: s.cfg.Now(), Member: name, KeyID: ev.keyID, Action: ev.action,
				OrderID: ev.orderID, Outcome: int(code), ClientIP: ev.ip})
		}
	}
	if s.cfg.NoAccessLog {
		return
	}
	s.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("request_id", ev.id),
		slog.String("ip", ev.ip),
		slog.String("method", r.Method),
		slog.String("path", certorder.Cut(r.URL.Path, 128)),
		slog.String("action", certorder.RedactKeys(ev.action)),
		slog.String("member", ev.member),
		slog.Int64("order_id", ev.orderID),
		slog.Int("error", int(code)),
		slog.Int("status", status),
		slog.Duration("latency", latency),
	)
}

// writeJSON writes a JSON answer with the headers every answer carries.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	// Assigned, not Set: the keys are canonical already, and the values
	// are shared (net/http only reads them).
	h["Content-Type"] = contentTypeJSON
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	w.Write(body)
}

var (
	contentTypeJSON = []string{"application/json"}
	noStore         = []string{"no-store"}
	noSniff         = []string{"nosniff"}
)
