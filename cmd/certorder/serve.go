package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/stores"
)

func (e *env) serve(ctx context.Context, args []string) error {
	fs := e.newFlags("serve", "[flags]")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (env CERTORDER_ADDR)")
	db := e.dbFlag(fs)
	segment := fs.String("ca-segment", "digicert", "path segment of the endpoint /api/<segment>/ (env CERTORDER_CA_SEGMENT)")
	demo := fs.Bool("demo", false, "add demo data and print working credentials and curl commands")
	errorsAs200 := fs.Bool("errors-as-200", false, "answer failures with HTTP 200 (the body still carries error_message)")
	storeTimeout := fs.Duration("store-timeout", server.DefaultStoreTimeout, "give up on the store after this long in one request (503)")
	logFormat := fs.String("log-format", "text", "log format: text or json (env CERTORDER_LOG_FORMAT)")
	accessLog := fs.Bool("access-log", true, "log one line per request")
	webPage := fs.Bool("web", true, "serve the member web page at / (env CERTORDER_WEB)")
	metricsAddr := fs.String("metrics-addr", "", "listen address for /metrics, /healthz and /readyz; empty: none (env CERTORDER_METRICS_ADDR)")
	pprofOn := fs.Bool("pprof", false, "also serve /debug/pprof/ on the metrics listener (for profiling; keep that listener private)")
	auditRetention := fs.Duration("audit-retention", 90*24*time.Hour, "keep the audit trail this long; 0 turns it off (env CERTORDER_AUDIT_RETENTION)")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM); SIGHUP reloads it (env CERTORDER_TLS_CERT)")
	tlsKey := fs.String("tls-key", "", "the certificate's private key (PEM) (env CERTORDER_TLS_KEY)")
	shutdownTimeout := fs.Duration("shutdown-timeout", 15*time.Second, "on SIGTERM, how long requests in flight may take to finish")
	readHeaderTimeout := fs.Duration("read-header-timeout", 5*time.Second, "time to read a request's headers")
	readTimeout := fs.Duration("read-timeout", 10*time.Second, "time to read a whole request")
	writeTimeout := fs.Duration("write-timeout", 15*time.Second, "time to write an answer")
	idleTimeout := fs.Duration("idle-timeout", 120*time.Second, "how long a keep-alive connection may idle")

	l := server.DefaultLimits
	fs.Float64Var(&l.MemberRate, "rate-limit", l.MemberRate, "requests per second per member; 0 turns it off (env CERTORDER_RATE_LIMIT)")
	fs.IntVar(&l.MemberBurst, "rate-burst", l.MemberBurst, "burst of the per-member limit")
	fs.Float64Var(&l.IPRate, "ip-rate-limit", l.IPRate, "requests per second per client IP; 0 turns it off (env CERTORDER_IP_RATE_LIMIT)")
	fs.IntVar(&l.IPBurst, "ip-rate-burst", l.IPBurst, "burst of the per-IP limit")
	fs.IntVar(&l.AuthFailures, "auth-fail-limit", l.AuthFailures, "failed authentications per IP or AccessName before a lockout; 0 turns it off (env CERTORDER_AUTH_FAIL_LIMIT)")
	fs.DurationVar(&l.AuthFailWindow, "auth-fail-window", l.AuthFailWindow, "window in which failed authentications are counted")
	fs.DurationVar(&l.AuthLockout, "auth-lockout", l.AuthLockout, "how long a locked-out IP or AccessName is refused")
	fs.IntVar(&l.MaxInFlight, "max-in-flight", l.MaxInFlight, "requests served at once; beyond it a fast 503; 0 turns it off (env CERTORDER_MAX_IN_FLIGHT)")
	trusted := fs.String("trusted-proxy", "", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For is believed (env CERTORDER_TRUSTED_PROXIES)")

	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := e.applyEnv(fs, map[string]string{
		"addr": "CERTORDER_ADDR", "ca-segment": "CERTORDER_CA_SEGMENT", "log-format": "CERTORDER_LOG_FORMAT",
		"metrics-addr": "CERTORDER_METRICS_ADDR", "audit-retention": "CERTORDER_AUDIT_RETENTION",
		"tls-cert": "CERTORDER_TLS_CERT", "tls-key": "CERTORDER_TLS_KEY",
		"rate-limit": "CERTORDER_RATE_LIMIT", "ip-rate-limit": "CERTORDER_IP_RATE_LIMIT",
		"auth-fail-limit": "CERTORDER_AUTH_FAIL_LIMIT", "max-in-flight": "CERTORDER_MAX_IN_FLIGHT",
		"trusted-proxy": "CERTORDER_TRUSTED_PROXIES", "db": "CERTORDER_DB", "web": "CERTORDER_WEB",
	}); err != nil {
		return err
	}
	if err := server.ValidSegment(*segment); err != nil {
		return usageError("%v", err)
	}
	for _, cidr := range strings.Split(*trusted, ",") {
		if cidr = strings.TrimSpace(cidr); cidr == "" {
			continue
		}
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return usageError("serve: --trusted-proxy %q: %v", cidr, err)
		}
		l.TrustedProxies = append(l.TrustedProxies, p.Masked())
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usageError("serve: --tls-cert and --tls-key go together")
	}
	var logger *slog.Logger
	switch *logFormat {
	case "text":
		logger = slog.New(slog.NewTextHandler(e.stderr, nil))
	case "json":
		logger = slog.New(slog.NewJSONHandler(e.stderr, nil))
	default:
		return usageError("serve: --log-format is text or json, not %q", *logFormat)
	}

	if *pprofOn && *metricsAddr == "" {
		return usageError("serve: --pprof needs --metrics-addr")
	}
	if e.getenv("GOGC") == "" {
		// The live heap is a few MB whatever the store holds, so collecting
		// less often costs little memory and buys about a fifth more
		// throughput (docs/PERFORMANCE.md). GOGC set in the environment wins.
		debug.SetGCPercent(400)
	}

	store, err := stores.Open(ctx, *db)
	if err != nil {
		return err
	}
	defer store.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	handler, err := server.New(store, server.Config{
		CASegment:      *segment,
		ErrorsAs200:    *errorsAs200,
		StoreTimeout:   *storeTimeout,
		Logger:         logger,
		NoAccessLog:    !*accessLog,
		Web:            *webPage,
		Limits:         l,
		AuditRetention: *auditRetention,
		Metrics:        reg,
	})
	if err != nil {
		return err
	}
	defer handler.Close() // after the server below has shut down: writes the last audit entries

	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: *readHeaderTimeout,
		ReadTimeout:       *readTimeout,
		WriteTimeout:      *writeTimeout,
		IdleTimeout:       *idleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if *tlsCert != "" {
		certs := &certReloader{certFile: *tlsCert, keyFile: *tlsKey}
		if err := certs.load(); err != nil {
			return err
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get}
		scheme = "https"
		stopReload := certs.reloadOnSIGHUP(logger)
		defer stopReload()
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	base := fmt.Sprintf("%s://%s/", scheme, ln.Addr())
	endpoint := base + "api/" + *segment + "/"
	if *demo {
		if err := e.seedDemo(ctx, store, base, endpoint, *db); err != nil {
			ln.Close()
			return err
		}
	}
	errc := make(chan error, 2)
	if *metricsAddr != "" {
		mln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			ln.Close()
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.Handle("/healthz", handler.Healthz())
		mux.Handle("/readyz", handler.Readyz())
		if *pprofOn {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		defer msrv.Close()
		go func() { errc <- fmt.Errorf("metrics listener: %w", msrv.Serve(mln)) }()
		logger.Info("metrics listening", "addr", mln.Addr().String())
	}
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	logger.Info("listening", "endpoint", endpoint, "db", redactDSN(*db))
	fmt.Fprintf(e.stderr, "certorder: listening on %s\n", endpoint)
	if *webPage {
		fmt.Fprintf(e.stderr, "certorder: member web page at %s\n", base)
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Stop accepting, let the requests in flight finish; then the deferred
	// calls write the last audit entries and close the store.
	logger.Info("shutting down", "timeout", shutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}

// redactDSN hides a password in a PostgreSQL URL, for the log.
func redactDSN(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		if at := strings.Index(dsn[i+3:], "@"); at >= 0 {
			if colon := strings.Index(dsn[i+3:i+3+at], ":"); colon >= 0 {
				return dsn[:i+3+colon+1] + "xxxxx" + dsn[i+3+at:]
			}
		}
	}
	return dsn
}

// certReloader holds the TLS certificate and reloads it from its files.
type certReloader struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

func (c *certReloader) load() error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	c.cert.Store(&cert)
	return nil
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.cert.Load(), nil }

// reloadOnSIGHUP reloads the pair on each SIGHUP; a pair that fails to load
// leaves the old one in use. It returns a function that stops it.
func (c *certReloader) reloadOnSIGHUP(logger *slog.Logger) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if err := c.load(); err != nil {
					logger.Error("TLS reload failed; the previous certificate stays in use", "err", err)
				} else {
					logger.Info("TLS certificate reloaded", "cert", c.certFile)
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}
