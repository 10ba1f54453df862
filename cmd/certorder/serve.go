package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/webhook"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func (e *env) serve(ctx context.Context, args []string) error {
	c, logger, err := e.parseServe(args)
	if err != nil {
		return err
	}
	if c.cacheMB < 0 {
		return usageError("serve: --cache-mb must not be negative")
	}
	if c.gogc == "" {
		// The live heap is the cache and a few MB, so collecting less often
		// costs little memory and buys about a fifth more throughput
		// (docs/PERFORMANCE.md); the memory limit below keeps the heap near
		// the cache's size all the same. GOGC set in the environment wins.
		debug.SetGCPercent(400)
	}
	if c.goMemLimit == "" {
		debug.SetMemoryLimit(int64(c.cacheMB+memoryHeadroomMB) << 20)
	}
	// Everything that can fail on the configuration or the machine fails
	// before the store is opened: a busy port or a bad key file leaves no
	// new store file behind.
	if err := checkDBDir(c.db); err != nil {
		return err
	}
	var upstream *digicert.Client
	if c.syncEvery > 0 || c.ccSecretFile != "" {
		if upstream, err = c.upstream.client(e, "serve"); err != nil {
			return err
		}
	}
	var ccSecret string
	if c.ccSecretFile != "" {
		if ccSecret, err = e.webhookSecret("serve", "certcentral-webhook-secret-file", c.ccSecretFile); err != nil {
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
	if c.demo {
		if err := refuseRealStore(ctx, c.db); err != nil {
			return err
		}
	}
	store, err := stores.Open(ctx, c.db)
	if err != nil {
		return fmt.Errorf("serve: opening the store %s: %w", redactDSN(c.db), err)
	}
	defer store.Close()
	// The cache in front of the store's credential reads, kept exact by
	// the store (credcache.Sourcer); off with --cache-mb 0, and correct
	// without it, only slower.
	var src credcache.Source
	if sourcer, ok := store.(credcache.Sourcer); ok && c.cacheMB > 0 {
		host, _ := os.Hostname()
		src, err = sourcer.CacheSource(ctx, credcache.SourceConfig{Logger: logger,
			Instance: fmt.Sprintf("%s pid %d %s", host, os.Getpid(), c.addr)})
		if err != nil {
			logger.Warn("cache: not started; every request reads the store", "err", err)
		}
	}
	creds := credcache.NewStore(store, src, c.cacheMB<<20, c.storeTimeout)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "certorder_cache_enabled",
		Help: "1 when the cache of credentials and orders is on; 0 when it is off (--cache-mb 0) or could not start (PostgreSQL: no working LISTEN)."},
		func() float64 {
			if creds.Enabled() {
				return 1
			}
			return 0
		}))
	registerCacheMetrics(reg, creds)
	var syncer *ccsync.Syncer
	var cc *certCentralWebhook
	if upstream != nil {
		if cc, syncer, err = newCertCentralWebhook(c, ccSecret, logger, store, reg, upstream); err != nil {
			return err
		}
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
		Notices:            c.smtp != nil,
		TestNotice:         c.testNotice(logger),
		ACMEURLTemplate:    c.acmeURLTemplate,
		Windows:            c.windows,
		Credentials:        creds,
		Certificates:       creds.Certificates(store),
		Limits:             c.limits,
		AuditRetention:     c.auditRetention,
		Metrics:            reg,
		Handlers:           cc.handlers(),
	})
	if err != nil {
		return err
	}
	defer handler.Close() // after the server below has shut down: writes the last audit entries
	if c.webhooks {
		defer e.startWebhooks(ctx, c, logger, store, reg)() // stops before the store closes
	}
	if c.smtp != nil {
		defer startNotices(ctx, c, logger, store, reg)() // stops before the store closes
	}
	defer startNextSteps(ctx, store, reg, c.windows, logger)()
	if c.syncEvery > 0 {
		defer startSync(ctx, c, logger, syncer, upstream)() // before the store closes
	}
	if cc != nil {
		defer cc.start(ctx)() // before the store closes
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

// checkDBDir checks that --db is a DSN a store opens and that a SQLite
// store's directory exists: SQLite's own error ("unable to open database
// file") names neither the file nor why.
func checkDBDir(db string) error {
	if err := checkDSN("serve", db); err != nil {
		return err
	}
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

// webhookStore is what serve's webhook worker uses: its store, and the
// events' orders for a chat room's line.
type webhookStore interface {
	webhook.Store
	notice.OrderFinder
}

// startWebhooks delivers members' webhook events in the background until
// the function it returns is called (after the listeners have stopped:
// deliveries go on while the API drains).
func (e *env) startWebhooks(ctx context.Context, c *serveConfig, logger *slog.Logger, store webhookStore,
	reg *prometheus.Registry) func() {
	w := webhook.NewWorker(webhook.WorkerConfig{Store: store, Logger: logger, Metrics: reg,
		Client:     webhook.NewHTTPClient(webhook.Options{AllowPrivate: c.webhookAllowPrivate, Timeout: c.webhookTimeout}),
		Lease:      c.webhookTimeout + 5*time.Second, // longer than any attempt
		Thresholds: storekit.ParseThresholds(c.webhookExpiring), PlanThresholds: storekit.ParseThresholds(c.webhookPlanEnding),
		Windows: c.windows, Orders: store, Texts: notice.Texts{PublicURL: c.notices.publicURL, Windows: c.windows}})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	return func() { cancel(); <-done }
}

// startSync runs the CertCentral sync in the background every
// --sync-every, and returns what stops it.
func startSync(ctx context.Context, c *serveConfig, logger *slog.Logger, syncer *ccsync.Syncer, client *digicert.Client) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		syncer.Every(ctx, c.syncEvery)
	}()
	logger.Info("syncing from CertCentral", "every", c.syncEvery.String(), "url", client.BaseURL())
	return func() { cancel(); <-done }
}

// listen serves the API (and the metrics listener) until ctx ends, then
// shuts down gracefully.
func (e *env) listen(ctx context.Context, c *serveConfig, logger *slog.Logger, store demoStore,
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

	// The connections stay below the descriptor limit, so that accept
	// never fails: idle ones make room for new ones.
	budget, fdLimit := server.DescriptorBudget()
	total := budget
	if c.maxConns > 0 {
		if c.maxConns > budget {
			logger.Warn("--max-conns is above what the descriptor limit allows; lowered", "max_conns", c.maxConns,
				"descriptor_limit", fdLimit, "lowered_to", budget)
		}
		total = min(c.maxConns, budget)
	}
	conns := server.LimitConns(ln, server.ConnLimits{PerIP: c.maxConnsPerIP, Total: total, Exempt: c.limits.TrustedProxies,
		HeaderTimeout: cmp.Or(c.readHeaderTimeout, c.readTimeout)}, reg)
	srv.ConnState = conns.ConnState
	ln = conns
	logger.Info("connections", "max_conns", total, "descriptor_limit", fdLimit, "max_conns_per_ip", c.maxConnsPerIP)
	base := fmt.Sprintf("%s://%s/", scheme, ln.Addr())
	endpoint := base + "api/" + c.segment + "/"
	if c.demo {
		if err := e.seedDemo(ctx, store, base, endpoint, c.db); err != nil {
			return err
		}
	}
	errc := make(chan error, 2)
	if mln != nil {
		// Within the descriptors' reserve: a few scrapers and probes.
		mconns := server.LimitConns(mln, server.ConnLimits{PerIP: c.maxConnsPerIP, Total: metricsConns, HeaderTimeout: metricsHeaderTimeout}, nil)
		msrv := &http.Server{Handler: metricsMux(reg, handler, c.pprof), ReadHeaderTimeout: metricsHeaderTimeout,
			IdleTimeout: c.idleTimeout, ConnState: mconns.ConnState}
		defer msrv.Close()
		go func() { errc <- fmt.Errorf("metrics listener: %w", msrv.Serve(mconns)) }()
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
	if c.journalStream == "" {
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
func registerCacheMetrics(reg prometheus.Registerer, c *credcache.Store) {
	stat := func(i int) func() float64 {
		return func() float64 {
			entries, hits, misses := c.Stats()
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

// metricsConns is the most connections the metrics listener holds (an
// idle one closed to admit a new one, as the API's), and
// metricsHeaderTimeout its ReadHeaderTimeout.
const (
	metricsConns         = 64
	metricsHeaderTimeout = 5 * time.Second
)

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
