// Package server is the HTTP side of certorder: the one POST endpoint of the
// interface (its protocol is package wire), the limits in front of it, the
// metrics, the audit trail, and the member web page (server/web) beside it.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/server/web"
	"github.com/certorder/certorder/wire"
	"github.com/prometheus/client_golang/prometheus"
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
	// Notices lets members add e-mail addresses for notices on the web
	// page (serve --smtp-addr).
	Notices bool
	// TestNotice sends a test message to an address now (the page's "Send a
	// test message"; mailer.Config.SendTest); nil: no such button.
	TestNotice func(ctx context.Context, a certorder.NoticeAddress) error
	// ACMEURLTemplate is shown on each order's page with the chain's
	// newest order in {orderId} (serve --acme-url-template); "" shows nothing.
	ACMEURLTemplate string
	// Windows name each order's next step on the web page; zero:
	// certorder.DefaultWindows.
	Windows certorder.Windows
	// Credentials is where the API and the sign-in read credentials: serve
	// puts the cache in front of the store here (credcache.Store); nil: the
	// store's FindCredential, each read within StoreTimeout.
	Credentials storekit.CredentialStore
	// Certificates is where CertificateCheck reads the member's
	// certificate, bounding its reads of the store by itself: serve puts
	// the same cache in front (credcache.Store.Certificates); nil: the
	// store's FindCertificates, each read within StoreTimeout.
	Certificates storekit.CertificateFinder
	// Handlers are served beside the API and the web page, by ServeMux
	// pattern: serve's CertCentral webhook receiver (ccwebhook.Path).
	Handlers map[string]http.Handler
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
	storekit.CredentialStore   // the API's one read per request
	storekit.CertificateFinder // CertificateCheck's second read, once the credentials are accepted
	storekit.AuditStore        // the audit trail's writer
	storekit.Pinger            // /readyz
	web.Store                  // the member web page
}

// Server is the service's HTTP handler. Close it after the http.Server
// has shut down, to write the last audit entries.
type Server struct {
	creds   storekit.CredentialStore   // Config.Credentials
	certs   storekit.CertificateFinder // Config.Certificates
	ping    storekit.Pinger
	cfg     Config
	mux     *http.ServeMux
	metrics *metrics
	audit   *auditor // nil without an audit trail
	closed  sync.Once
	// realClock: cfg.Now is the real clock (Config.Now was nil), so that a
	// reading of time.Now serves as its time (clock).
	realClock bool

	draining    atomic.Bool  // shutting down: answers close their connections, /readyz says 503
	lastRequest atomic.Int64 // when the last request arrived, in UnixNano

	endpoint           string     // the path of the endpoint, /api/<segment>/
	memberRate, ipRate *buckets   // nil when off
	ipFails, pairFails *failures  // per IP, per IP and AccessName; nil when off
	perIP              *holds     // nil when off
	web                *webLimits // the web page's; nil when off
	maxInFlight        int64      // 0 when off
	inFlight           atomic.Int64
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
	realClock := cfg.Now == nil
	if realClock {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := cfg.Limits
	s := &Server{
		ping: store, cfg: cfg, realClock: realClock,
		metrics:    newMetrics(cfg.Metrics),
		memberRate: newBuckets(l.MemberRate, l.MemberBurst),
		ipRate:     newBuckets(l.IPRate, l.IPBurst),
		ipFails:    newFailures(l.AuthFailuresPerIP, l),
		pairFails:  newFailures(l.AuthFailures, l),
		perIP:      newHolds(l.MaxPerIP),
		web:        newWebLimits(l),
		endpoint:   "/api/" + cfg.CASegment + "/",
	}
	if l.MaxInFlight > 0 {
		s.maxInFlight = int64(l.MaxInFlight)
	}
	if s.perIP != nil && cfg.Metrics != nil {
		cfg.Metrics.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "certorder_requests_open",
			Help: "API requests held open now, bodies still arriving included (what max-per-ip bounds for each address).",
		}, s.perIP.count))
	}
	uncached := credcache.NewStore(store, nil, 0, cfg.StoreTimeout)
	if s.creds = cfg.Credentials; s.creds == nil {
		s.creds = uncached
	}
	if s.certs = cfg.Certificates; s.certs == nil {
		s.certs = uncached.Certificates(store)
	}
	if cfg.AuditRetention > 0 {
		s.audit = newAuditor(store, cfg.AuditRetention, cfg.Now, s.metrics.auditDropped, cfg.Logger)
	}
	s.mux = http.NewServeMux()
	s.mux.Handle("/healthz", s.Healthz())
	s.mux.Handle("/readyz", s.Readyz())
	unknownPath := func(w http.ResponseWriter, r *http.Request) {
		ev := s.newEvent(r, time.Now())
		s.answer(w, r, &ev, nil, wire.Fail(wire.UnknownPath))
	}
	for pattern, h := range cfg.Handlers {
		s.mux.Handle(pattern, h)
	}
	if cfg.Web {
		wc := web.Config{SignIn: s.signIn, Secure: s.secure, Now: cfg.Now, Logger: cfg.Logger, StoreTimeout: cfg.StoreTimeout,
			ClientIP:           func(r *http.Request) string { return clientIP(r, cfg.Limits.TrustedProxies) },
			SelfServiceKeysOff: cfg.SelfServiceKeysOff, PrivateWebhooks: cfg.PrivateWebhooks, Notices: cfg.Notices,
			TestNotice: cfg.TestNotice, ACMEURLTemplate: cfg.ACMEURLTemplate, Windows: cfg.Windows}
		if s.audit != nil {
			wc.Audit = s.audit.record // sign-ins and key changes, beside the API's calls
		}
		if s.web != nil {
			wc.Admit = s.admitWeb
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
	start := time.Now()
	s.lastRequest.Store(start.UnixNano())
	if s.draining.Load() {
		w.Header().Set("Connection", "close")
	}
	switch p := r.URL.Path; {
	case (p == s.endpoint || p == s.endpoint[:len(s.endpoint)-1]) && r.URL.RawPath == "":
		// Only the literal path: RawPath is set when the path was written
		// with escapes that matter (/api%2Fdigicert%2F, /api/%64igicert/),
		// and such a request is not the endpoint's (below: 102).
		s.handleAPI(w, r, start)
	case isAPIPath(p):
		ev := s.newEvent(r, start)
		s.answer(w, r, &ev, nil, wire.Fail(wire.UnknownPath))
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
