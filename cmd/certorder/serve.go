package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/server/web"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/webhook"
)

// serveConfig is every setting of serve.
type serveConfig struct {
	addr, db, segment, logFormat, metricsAddr, tlsCert, tlsKey, trusted string
	demo, errorsAs200, accessLog, web, pprof, memberKeys                bool
	webhooks, webhookAllowPrivate                                       bool
	webhookExpiring, acmeURLTemplate                                    string
	storeTimeout, auditRetention, shutdownTimeout, shutdownDrain        time.Duration
	webhookTimeout                                                      time.Duration
	readHeaderTimeout, readTimeout, writeTimeout, idleTimeout           time.Duration
	limits                                                              server.Limits
	cacheMB, maxConnsPerIP                                              int
	syncEvery                                                           time.Duration
	upstream                                                            upstreamConfig
}

// option is one setting: its flag, its environment variable ("" for none;
// a flag wins over its variable), its help, and where its value goes.
type option struct {
	flag, env, help string
	value           flagValue
}

// flagValue defines a flag of some type on a flag set.
type flagValue func(fs *flag.FlagSet, name, usage string)

func stringVar(p *string, def string) flagValue {
	return func(fs *flag.FlagSet, name, usage string) { fs.StringVar(p, name, def, usage) }
}
func boolVar(p *bool, def bool) flagValue {
	return func(fs *flag.FlagSet, name, usage string) { fs.BoolVar(p, name, def, usage) }
}
func durationVar(p *time.Duration, def time.Duration) flagValue {
	return func(fs *flag.FlagSet, name, usage string) { fs.DurationVar(p, name, def, usage) }
}
func intVar(p *int, def int) flagValue {
	return func(fs *flag.FlagSet, name, usage string) { fs.IntVar(p, name, def, usage) }
}
func floatVar(p *float64, def float64) flagValue {
	return func(fs *flag.FlagSet, name, usage string) { fs.Float64Var(p, name, def, usage) }
}

// options is the table of serve's settings, each declared once.
func (c *serveConfig) options() []option {
	l, d := &c.limits, server.DefaultLimits
	return append([]option{
		{"addr", "CERTORDER_ADDR", "listen address", stringVar(&c.addr, "127.0.0.1:8080")},
		{"db", "CERTORDER_DB", dbHelp, stringVar(&c.db, defaultDB)},
		{"ca-segment", "CERTORDER_CA_SEGMENT", "path segment of the endpoint /api/<segment>/", stringVar(&c.segment, "digicert")},
		{"demo", "", "add demo data and print working credentials and curl commands", boolVar(&c.demo, false)},
		{"errors-as-200", "CERTORDER_ERRORS_AS_200", "answer failures with HTTP 200 (the body still carries error_message)", boolVar(&c.errorsAs200, false)},
		{"store-timeout", "CERTORDER_STORE_TIMEOUT", "give up on the store after this long in one request (503)", durationVar(&c.storeTimeout, server.DefaultStoreTimeout)},
		{"log-format", "CERTORDER_LOG_FORMAT", "log format: text or json", stringVar(&c.logFormat, "text")},
		{"access-log", "CERTORDER_ACCESS_LOG", "log one line per request", boolVar(&c.accessLog, true)},
		{"web", "CERTORDER_WEB", "serve the member web page at /", boolVar(&c.web, true)},
		{"member-keys", "CERTORDER_MEMBER_KEYS", "let members create and revoke their own API keys on the web page (admin member keys NAME off turns it off for one)", boolVar(&c.memberKeys, true)},
		{"metrics-addr", "CERTORDER_METRICS_ADDR", "listen address for /metrics, /healthz and /readyz; empty: none", stringVar(&c.metricsAddr, "")},
		{"pprof", "", "also serve /debug/pprof/ on the metrics listener (for profiling; keep that listener private)", boolVar(&c.pprof, false)},
		{"cache-mb", "CERTORDER_CACHE_MB", "memory for the cache of credentials and orders, in MiB; 0 turns it off", intVar(&c.cacheMB, credcache.DefaultBytes>>20)},
		{"audit-retention", "CERTORDER_AUDIT_RETENTION", "keep the audit trail this long; 0 turns it off", durationVar(&c.auditRetention, 90*24*time.Hour)},
		{"tls-cert", "CERTORDER_TLS_CERT", "serve HTTPS with this certificate (PEM); SIGHUP reloads it", stringVar(&c.tlsCert, "")},
		{"tls-key", "CERTORDER_TLS_KEY", "the certificate's private key (PEM)", stringVar(&c.tlsKey, "")},
		{"shutdown-drain", "CERTORDER_SHUTDOWN_DRAIN", "on SIGTERM, keep answering (each answer closing its connection, /readyz 503) until no request has come for 200ms, at most this long, then stop accepting", durationVar(&c.shutdownDrain, 2*time.Second)},
		{"shutdown-timeout", "CERTORDER_SHUTDOWN_TIMEOUT", "then, how long requests in flight may take to finish", durationVar(&c.shutdownTimeout, 15*time.Second)},
		{"read-header-timeout", "CERTORDER_READ_HEADER_TIMEOUT", "time to read a request's headers", durationVar(&c.readHeaderTimeout, 5*time.Second)},
		{"read-timeout", "CERTORDER_READ_TIMEOUT", "time to read a whole request", durationVar(&c.readTimeout, 10*time.Second)},
		{"write-timeout", "CERTORDER_WRITE_TIMEOUT", "time to write an answer", durationVar(&c.writeTimeout, 15*time.Second)},
		{"idle-timeout", "CERTORDER_IDLE_TIMEOUT", "how long a keep-alive connection may idle", durationVar(&c.idleTimeout, 30*time.Second)},
		{"max-conns-per-ip", "CERTORDER_MAX_CONNS_PER_IP", "connections one client IP (IPv6: its /64) may hold open, idle ones included; beyond it a new one is closed at once; trusted proxies are exempt; 0 turns it off", intVar(&c.maxConnsPerIP, server.DefaultMaxConnsPerIP)},
		{"rate-limit", "CERTORDER_RATE_LIMIT", "requests per second per member; 0 turns it off", floatVar(&l.MemberRate, d.MemberRate)},
		{"rate-burst", "CERTORDER_RATE_BURST", "burst of the per-member limit", intVar(&l.MemberBurst, d.MemberBurst)},
		{"ip-rate-limit", "CERTORDER_IP_RATE_LIMIT", "requests per second per client IP; 0 turns it off", floatVar(&l.IPRate, d.IPRate)},
		{"ip-rate-burst", "CERTORDER_IP_RATE_BURST", "burst of the per-IP limit", intVar(&l.IPBurst, d.IPBurst)},
		{"auth-fail-limit", "CERTORDER_AUTH_FAIL_LIMIT", "failed authentications from one IP for one AccessName before that pair is locked out; 0 turns it off", intVar(&l.AuthFailures, d.AuthFailures)},
		{"auth-fail-ip-limit", "CERTORDER_AUTH_FAIL_IP_LIMIT", "failed authentications from one IP, any names, before the IP is locked out; 0 turns it off", intVar(&l.AuthFailuresPerIP, d.AuthFailuresPerIP)},
		{"auth-fail-window", "CERTORDER_AUTH_FAIL_WINDOW", "window in which failed authentications are counted", durationVar(&l.AuthFailWindow, d.AuthFailWindow)},
		{"auth-lockout", "CERTORDER_AUTH_LOCKOUT", "how long a locked-out IP, or IP and AccessName, is refused", durationVar(&l.AuthLockout, d.AuthLockout)},
		{"max-in-flight", "CERTORDER_MAX_IN_FLIGHT", "requests served at once, counted once their body has arrived; beyond it a fast 503; 0 turns it off", intVar(&l.MaxInFlight, d.MaxInFlight)},
		{"max-per-ip", "CERTORDER_MAX_PER_IP", "requests one client IP may hold open at once, bodies still arriving included; beyond it 429; 0 turns it off", intVar(&l.MaxPerIP, d.MaxPerIP)},
		{"body-timeout", "CERTORDER_BODY_TIMEOUT", "time a request's body may take to arrive, after its headers (408); 0 leaves only --read-timeout", durationVar(&l.BodyTimeout, d.BodyTimeout)},
		{"webhooks", "CERTORDER_WEBHOOKS", "deliver members' webhook events in the background", boolVar(&c.webhooks, true)},
		{"webhook-allow-private", "CERTORDER_WEBHOOK_ALLOW_PRIVATE", "let webhook endpoints be plain http and on loopback, private or link-local addresses (intranets, tests)", boolVar(&c.webhookAllowPrivate, false)},
		{"webhook-timeout", "CERTORDER_WEBHOOK_TIMEOUT", "time a webhook endpoint has to answer", durationVar(&c.webhookTimeout, webhook.DefaultTimeout)},
		{"webhook-expiring-days", "CERTORDER_WEBHOOK_EXPIRING_DAYS", "order.expiring is sent as an order without a successor crosses each of these days before expiry", stringVar(&c.webhookExpiring, "30,7,1")},
		{"acme-url-template", "CERTORDER_ACME_URL_TEMPLATE", "show members, on each order's page, this ACME directory URL with the newest order of the chain in place of {orderId}, e.g. https://one.digicert.com/mpki/api/v1/acme/v2/directory?action=renew&orderId={orderId}", stringVar(&c.acmeURLTemplate, "")},
		{"trusted-proxy", "CERTORDER_TRUSTED_PROXIES", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For is believed", stringVar(&c.trusted, "")},
		{"sync-every", "CERTORDER_SYNC_EVERY", "sync orders from DigiCert CertCentral this often, as certorder sync does; 0 turns it off", durationVar(&c.syncEvery, 0)},
	}, c.upstream.options()...)
}

// parseServe reads serve's flags and environment into a checked config.
func (e *env) parseServe(args []string) (*serveConfig, *slog.Logger, error) {
	c := &serveConfig{}
	fs := e.newFlags("serve", "[flags]")
	vars := map[string]string{}
	for _, o := range c.options() {
		usage := o.help
		if o.env != "" {
			usage += " (env " + o.env + ")"
			vars[o.flag] = o.env
		}
		o.value(fs, o.flag, usage)
	}
	if _, err := parse(fs, args, 0); err != nil {
		return nil, nil, err
	}
	if err := e.applyEnv(fs, vars); err != nil {
		return nil, nil, err
	}
	if err := server.ValidSegment(c.segment); err != nil {
		return nil, nil, usageError("%v", err)
	}
	for _, cidr := range strings.Split(c.trusted, ",") {
		if cidr = strings.TrimSpace(cidr); cidr == "" {
			continue
		}
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, nil, usageError("serve: --trusted-proxy %q: %v", cidr, err)
		}
		c.limits.TrustedProxies = append(c.limits.TrustedProxies, p.Masked())
	}
	if err := checkAddr("addr", c.addr); err != nil {
		return nil, nil, err
	}
	if c.metricsAddr != "" {
		if err := checkAddr("metrics-addr", c.metricsAddr); err != nil {
			return nil, nil, err
		}
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return nil, nil, usageError("serve: --tls-cert and --tls-key go together")
	}
	if c.webhooks && len(certorder.ParseThresholds(c.webhookExpiring)) == 0 {
		return nil, nil, usageError("serve: --webhook-expiring-days %q: give days such as 30,7,1", c.webhookExpiring)
	}
	if c.pprof && c.metricsAddr == "" {
		return nil, nil, usageError("serve: --pprof needs --metrics-addr")
	}
	if c.acmeURLTemplate != "" {
		if err := web.CheckACMEURLTemplate(c.acmeURLTemplate); err != nil {
			return nil, nil, usageError("serve: --acme-url-template: %v", err)
		}
	}
	if c.syncEvery < 0 {
		return nil, nil, usageError("serve: --sync-every must not be negative")
	}
	switch c.logFormat {
	case "text":
		return c, slog.New(slog.NewTextHandler(e.stderr, nil)), nil
	case "json":
		return c, slog.New(slog.NewJSONHandler(e.stderr, nil)), nil
	}
	return nil, nil, usageError("serve: --log-format is text or json, not %q", c.logFormat)
}

func (e *env) serve(ctx context.Context, args []string) error {
	c, logger, err := e.parseServe(args)
	if err != nil {
		return err
	}
	if c.cacheMB < 0 {
		return usageError("serve: --cache-mb must not be negative")
	}
	if e.getenv("GOGC") == "" {
		// The live heap is the cache and a few MB, so collecting less often
		// costs little memory and buys about a fifth more throughput
		// (docs/PERFORMANCE.md); the memory limit below keeps the heap near
		// the cache's size all the same. GOGC set in the environment wins.
		debug.SetGCPercent(400)
	}
	if e.getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(c.cacheMB+memoryHeadroomMB) << 20)
	}
	// Everything that can fail on the configuration or the machine fails
	// before the store is opened: a busy port or a bad key file leaves no
	// new store file behind.
	if err := checkDBDir(c.db); err != nil {
		return err
	}
	var upstream *digicert.Client
	if c.syncEvery > 0 {
		if upstream, err = c.upstream.client(e, "serve --sync-every"); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("serve: --addr %s: %w", c.addr, err)
	}
	defer ln.Close()
	var mln net.Listener
	if c.metricsAddr != "" {
		if mln, err = net.Listen("tcp", c.metricsAddr); err != nil {
			return fmt.Errorf("serve: --metrics-addr %s: %w", c.metricsAddr, err)
		}
		defer mln.Close()
	}
	store, err := stores.Open(ctx, c.db)
	if err != nil {
		return fmt.Errorf("serve: opening the store %s: %w", redactDSN(c.db), err)
	}
	defer store.Close()
	cacheOn := false
	if cached, ok := store.(certorder.CredentialCache); ok && c.cacheMB > 0 {
		host, _ := os.Hostname()
		err := cached.StartCache(ctx, certorder.CacheConfig{Bytes: c.cacheMB << 20, Logger: logger,
			Instance: fmt.Sprintf("%s pid %d %s", host, os.Getpid(), c.addr)})
		if err != nil {
			// Correct without it, only slower.
			logger.Warn("cache: not started; every request reads the store", "err", err)
		}
		cacheOn = err == nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "certorder_cache_enabled",
		Help: "1 when the cache of credentials and orders is on; 0 when it is off (--cache-mb 0) or could not start (PostgreSQL: no working LISTEN)."},
		func() float64 {
			if cacheOn {
				return 1
			}
			return 0
		}))
	if cached, ok := store.(certorder.CredentialCache); ok {
		registerCacheMetrics(reg, cached)
	}
	handler, err := server.New(store, server.Config{
		CASegment:          c.segment,
		ErrorsAs200:        c.errorsAs200,
		StoreTimeout:       c.storeTimeout,
		Logger:             logger,
		NoAccessLog:        !c.accessLog,
		Web:                c.web,
		SelfServiceKeysOff: !c.memberKeys,
		PrivateWebhooks:    c.webhookAllowPrivate,
		ACMEURLTemplate:    c.acmeURLTemplate,
		Limits:             c.limits,
		AuditRetention:     c.auditRetention,
		Metrics:            reg,
	})
	if err != nil {
		return err
	}
	defer handler.Close() // after the server below has shut down: writes the last audit entries
	if c.webhooks {
		defer e.startWebhooks(ctx, c, logger, store, reg)() // stops before the store closes
	}
	if c.syncEvery > 0 {
		stop, err := e.startSync(ctx, c, logger, store, reg, upstream)
		if err != nil {
			return err
		}
		defer stop() // before the store closes
	}
	return e.listen(ctx, c, logger, store, handler, reg, ln, mln)
}

// checkAddr checks a listen address's form, HOST:PORT or :PORT, before
// anything is opened: a nonsense address is a usage error.
func checkAddr(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
			err = fmt.Errorf("port %q is not a number from 0 to 65535", port)
		}
	}
	if err != nil {
		return usageError("serve: --%s %q: %v (want HOST:PORT or :PORT, such as 127.0.0.1:8080)", flagName, addr, err)
	}
	return nil
}

// checkDBDir checks that a SQLite store's directory exists: SQLite's own
// error ("unable to open database file") names neither the file nor why.
func checkDBDir(db string) error {
	path := stores.SQLitePath(db)
	if stores.IsPostgres(db) || path == "" || strings.ContainsAny(path, "?#") {
		return nil // stores.Open says what is wrong
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usageError("serve: --db %s: the directory %s does not exist", db, dir)
	}
	return nil
}

// startWebhooks delivers members' webhook events in the background until
// the function it returns is called (after the listeners have stopped:
// deliveries go on while the API drains).
func (e *env) startWebhooks(ctx context.Context, c *serveConfig, logger *slog.Logger, store certorder.Store,
	reg *prometheus.Registry) func() {
	w := webhook.NewWorker(webhook.WorkerConfig{Store: store, Logger: logger, Metrics: reg,
		Client:     webhook.NewHTTPClient(webhook.Options{AllowPrivate: c.webhookAllowPrivate, Timeout: c.webhookTimeout}),
		Lease:      c.webhookTimeout + 5*time.Second, // longer than any attempt
		Thresholds: certorder.ParseThresholds(c.webhookExpiring)})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	return func() { cancel(); <-done }
}

// startSync runs the CertCentral sync in the background every
// --sync-every, and returns what stops it.
func (e *env) startSync(ctx context.Context, c *serveConfig, logger *slog.Logger, store certorder.Store,
	reg *prometheus.Registry, client *digicert.Client) (func(), error) {
	syncer, err := ccsync.New(ccsync.Config{Store: store, Client: client, Logger: logger, Metrics: ccsync.NewMetrics(reg)})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		syncer.Every(ctx, c.syncEvery)
	}()
	logger.Info("syncing from CertCentral", "every", c.syncEvery.String(), "url", client.BaseURL())
	return func() { cancel(); <-done }, nil
}

// listen serves the API (and the metrics listener) until ctx ends, then
// shuts down gracefully.
func (e *env) listen(ctx context.Context, c *serveConfig, logger *slog.Logger, store certorder.Store,
	handler *server.Server, reg *prometheus.Registry, ln, mln net.Listener) error {
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: c.readHeaderTimeout,
		ReadTimeout:       c.readTimeout,
		WriteTimeout:      c.writeTimeout,
		IdleTimeout:       c.idleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	var certs *certReloader
	if c.tlsCert != "" {
		certs = &certReloader{certFile: c.tlsCert, keyFile: c.tlsKey}
		if err := certs.load(); err != nil {
			return err
		}
		srv.TLSConfig = tlsConfig(certs.get)
		scheme = "https"
	}
	// SIGHUP (systemctl reload) never stops the service, whatever is
	// configured: without it, the signal's default action would.
	stopReload := reloadOnSIGHUP(logger, certs)
	defer stopReload()

	ln = server.LimitConnsPerIP(ln, c.maxConnsPerIP, c.limits.TrustedProxies, reg)
	base := fmt.Sprintf("%s://%s/", scheme, ln.Addr())
	endpoint := base + "api/" + c.segment + "/"
	if c.demo {
		if err := e.seedDemo(ctx, store, base, endpoint, c.db); err != nil {
			return err
		}
	}
	errc := make(chan error, 2)
	if mln != nil {
		msrv := &http.Server{Handler: metricsMux(reg, handler, c.pprof), ReadHeaderTimeout: 5 * time.Second}
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
	logger.Info("listening", "endpoint", endpoint, "db", redactDSN(c.db))
	// The plain lines are for a terminal. Under systemd (JOURNAL_STREAM set)
	// the journal gets the structured line above only.
	if e.getenv("JOURNAL_STREAM") == "" {
		fmt.Fprintf(e.stderr, "certorder: listening on %s\n", endpoint)
		if c.web {
			fmt.Fprintf(e.stderr, "certorder: member web page at %s\n", base)
		}
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Drain first: a request a client sent before the signal may still sit
	// unread on an idle keep-alive connection or in the listen queue, and
	// closing those now would reset it. So keep answering, each answer
	// closing its connection, until requests stop coming (or the drain
	// time is up); then stop accepting and let the requests in flight
	// finish. The deferred calls write the last audit entries and close
	// the store.
	logger.Info("draining", "at_most", c.shutdownDrain.String())
	handler.Drain()
	for end := time.Now().Add(c.shutdownDrain); time.Now().Before(end) && handler.Quiet() < drainQuiet; {
		time.Sleep(drainQuiet / 10)
	}
	logger.Info("shutting down", "timeout", c.shutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}

// registerCacheMetrics exposes the cache's counters.
func registerCacheMetrics(reg prometheus.Registerer, c certorder.CredentialCache) {
	stat := func(i int) func() float64 {
		return func() float64 {
			entries, hits, misses := c.CacheStats()
			return float64([]int64{entries, hits, misses}[i])
		}
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "certorder_cache_entries",
			Help: "Entries in the cache of credentials and orders (of every generation, until evicted)."}, stat(0)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "certorder_cache_hits_total",
			Help: "API requests whose credential (and order) the cache answered."}, stat(1)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "certorder_cache_misses_total",
			Help: "API requests that read the store."}, stat(2)),
	)
}

// memoryHeadroomMB is the Go heap allowed beyond the cache (GOMEMLIMIT's
// default): the live heap outside the cache is a few MB.
const memoryHeadroomMB = 48

// drainQuiet is how long without a request ends the drain.
const drainQuiet = 200 * time.Millisecond

// metricsMux serves /metrics, the health checks and, if asked, pprof.
func metricsMux(reg *prometheus.Registry, handler *server.Server, withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", handler.Healthz())
	mux.Handle("/readyz", handler.Readyz())
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// tlsConfig offers TLS 1.2 and 1.3; for 1.2, only the AEAD suites with
// forward secrecy of Mozilla's "intermediate" profile (Go has no DHE), so
// that no CBC suite is offered. TLS 1.3's suites are not configurable.
func tlsConfig(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: getCert,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
	}
}

// dsnPassword is a password in a key=value DSN: password=x or password='x y'.
var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// redactDSN hides every secret form of a DSN, for logs and errors: the
// password of a URL's user:pass@, a password= query parameter, and
// password= in a key=value DSN. A passfile path is not a secret and stays.
func redactDSN(dsn string) string {
	const hidden = "xxxxx"
	if !strings.Contains(dsn, "://") {
		return dsnPassword.ReplaceAllString(dsn, "${1}"+hidden)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a DSN that does not parse)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), hidden)
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, hidden)
		}
	}
	u.RawQuery = q.Encode()
	s, _ := url.PathUnescape(u.String())
	return s
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

// reloadOnSIGHUP handles SIGHUP until the function it returns is called:
// it reloads the TLS pair when there is one (a pair that fails to load
// leaves the old one in use), and otherwise logs that there is nothing to
// reload. Either way the service keeps serving. The other settings come
// from flags and the environment, which a running process cannot re-read:
// changing them takes a restart.
func reloadOnSIGHUP(logger *slog.Logger, certs *certReloader) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if certs == nil {
					logger.Info("SIGHUP: nothing to reload (no TLS); settings change with a restart")
				} else if err := certs.load(); err != nil {
					logger.Error("SIGHUP: TLS reload failed; the previous certificate stays in use", "err", err)
				} else {
					logger.Info("SIGHUP: TLS certificate reloaded", "cert", certs.certFile)
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}
