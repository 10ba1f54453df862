package main

import (
	"flag"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/mailer"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/server/web"
	"github.com/certorder/certorder/webhook"
)

// serveConfig is every setting of serve.
type serveConfig struct {
	addr, db, segment, logFormat, metricsAddr, tlsCert, tlsKey, trusted string
	demo, errorsAs200, accessLog, web, pprof, memberKeys                bool
	webhooks, webhookAllowPrivate                                       bool
	webhookExpiring, webhookPlanEnding, acmeURLTemplate                 string
	windows                                                             certorder.Windows
	storeTimeout, auditRetention, shutdownTimeout, shutdownDrain        time.Duration
	webhookTimeout                                                      time.Duration
	readHeaderTimeout, readTimeout, writeTimeout, idleTimeout           time.Duration
	limits                                                              server.Limits
	cacheMB, maxConnsPerIP, maxConns                                    int
	syncEvery                                                           time.Duration
	upstream                                                            upstreamConfig
	ccSecretFile, ccAllowList                                           string
	ccAllow                                                             []netip.Prefix
	notices                                                             noticeConfig
	smtp                                                                *mailer.Config // nil: no notices
	gogc, goMemLimit, journalStream                                     string         // other programs' variables, read only to know they are set
}

// option is one setting: its flag ("" for a variable alone, such as a
// secret that must never sit in a command line), its environment variable
// ("" for none; a flag wins over its variable), its help, and where its
// value goes. Every command that reads the environment does it through a
// table of these (defineOptions, applyEnv).
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
		dbOption(&c.db),
		{"ca-segment", "CERTORDER_CA_SEGMENT", "path segment of the endpoint /api/<segment>/", stringVar(&c.segment, "digicert")},
		{"demo", "", "add demo data and print working credentials and curl commands; refuses a store with members other than demo", boolVar(&c.demo, false)},
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
		{"max-conns-per-ip", "CERTORDER_MAX_CONNS_PER_IP", "connections one client IP (IPv6: its /64, and 4 times as many its /56) may hold open, idle ones included; beyond it a new one is closed at once; trusted proxies are exempt; 0 turns it off", intVar(&c.maxConnsPerIP, server.DefaultMaxConnsPerIP)},
		{"max-conns", "CERTORDER_MAX_CONNS", "connections all clients may hold open; at it, an idle one of the client holding the most is closed to admit a new one, never one mid-request; 0: the descriptor limit less a reserve (the larger of 256 and an eighth, at most half), which is also the most", intVar(&c.maxConns, 0)},
		{"rate-limit", "CERTORDER_RATE_LIMIT", "requests per second per member; 0 turns it off", floatVar(&l.MemberRate, d.MemberRate)},
		{"rate-burst", "CERTORDER_RATE_BURST", "burst of the per-member limit", intVar(&l.MemberBurst, d.MemberBurst)},
		{"ip-rate-limit", "CERTORDER_IP_RATE_LIMIT", "requests per second per client IP; 0 turns it off", floatVar(&l.IPRate, d.IPRate)},
		{"ip-rate-burst", "CERTORDER_IP_RATE_BURST", "burst of the per-IP limit", intVar(&l.IPBurst, d.IPBurst)},
		{"web-rate-limit", "CERTORDER_WEB_RATE_LIMIT", "requests per second per client IP to the member web page (its forms' POSTs a fifth of it), apart from the API's; 0 turns it off", floatVar(&l.WebRate, d.WebRate)},
		{"web-rate-burst", "CERTORDER_WEB_RATE_BURST", "burst of the web page's per-IP limit (its forms' a fifth of it)", intVar(&l.WebBurst, d.WebBurst)},
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
		{"webhook-expiring-days", "CERTORDER_WEBHOOK_EXPIRING_DAYS", "order.expiring is sent as a certificate whose order has no issued renewal crosses each of these days before its end", stringVar(&c.webhookExpiring, "30,7,1")},
		{"webhook-plan-ending-days", "CERTORDER_WEBHOOK_PLAN_ENDING_DAYS", "order.plan_ending is sent as a plan without a renewal crosses each of these days before its end", stringVar(&c.webhookPlanEnding, "90,60,30,7")},
		{"acme-url-template", "CERTORDER_ACME_URL_TEMPLATE", "show members, on each order's page, this ACME directory URL with the newest order of the chain in place of {orderId}, e.g. https://one.digicert.com/mpki/api/v1/acme/v2/directory?action=renew&orderId={orderId}", stringVar(&c.acmeURLTemplate, "")},
		{"trusted-proxy", "CERTORDER_TRUSTED_PROXIES", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For is believed", stringVar(&c.trusted, "")},
		{"sync-every", "CERTORDER_SYNC_EVERY", "sync orders from DigiCert CertCentral this often, as certorder sync does; 0 turns it off", durationVar(&c.syncEvery, 0)},
		{"certcentral-webhook-secret-file", "CERTORDER_CERTCENTRAL_WEBHOOK_SECRET_FILE", "receive CertCentral's webhook at POST /certcentral/webhook, its X-WEBHOOK-KEY checked against the secret in this file (at least 32 characters), and apply its events at once (needs the CertCentral API key)", stringVar(&c.ccSecretFile, "")},
		{"certcentral-webhook-allow", "CERTORDER_CERTCENTRAL_WEBHOOK_ALLOW", "comma-separated CIDRs CertCentral's webhook is accepted from, by --trusted-proxy's rules (DigiCert sends from 216.168.240.0/20); empty: any", stringVar(&c.ccAllowList, "")},
		{"", "GOGC", "the Go runtime's; unset, serve collects at 400", stringVar(&c.gogc, "")},
		{"", "GOMEMLIMIT", "the Go runtime's; unset, serve limits memory to the cache and its headroom", stringVar(&c.goMemLimit, "")},
		{"", "JOURNAL_STREAM", "systemd's; set, serve leaves out its plain lines for a terminal", stringVar(&c.journalStream, "")},
	}, slices.Concat(windowOptions(&c.windows), c.upstream.options(), c.notices.options())...)
}

// parseCIDRs reads a flag's comma-separated CIDRs (an address alone is
// its own /32 or /128).
func parseCIDRs(flagName, list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, cidr := range strings.Split(list, ",") {
		if cidr = strings.TrimSpace(cidr); cidr == "" {
			continue
		}
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			a, aerr := netip.ParseAddr(cidr)
			if aerr != nil {
				return nil, usageError("serve: --%s %q: %v", flagName, cidr, err)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// dbOption is --db, CERTORDER_DB: the store, for serve, sync and admin.
// stores.Open picks the backend by the value's scheme.
// windowOptions are the windows that name an order's next step: serve's,
// and those of the commands that show it (info, current, admin order list),
// so that one environment file sets them all.
func windowOptions(w *certorder.Windows) []option {
	d := certorder.DefaultWindows
	return []option{
		{"reissue-window-days", "CERTORDER_REISSUE_WINDOW_DAYS", "a certificate is due for reissue this many days before its end (a third of its life if that is shorter)", intVar(&w.Reissue, d.Reissue)},
		{"renewal-window-days", "CERTORDER_RENEWAL_WINDOW_DAYS", "an order without a renewal is due for renewal this many days before its plan ends", intVar(&w.Renewal, d.Renewal)},
	}
}

// checkWindows refuses windows that cannot be meant.
func checkWindows(cmd string, w certorder.Windows) error {
	if w.Reissue < 1 || w.Renewal < 1 || w.Reissue > 3650 || w.Renewal > 3650 {
		return usageError("%s: --reissue-window-days and --renewal-window-days must be 1 to 3650 days (got %d and %d)", cmd, w.Reissue, w.Renewal)
	}
	return nil
}

func dbOption(p *string) option {
	return option{"db", "CERTORDER_DB", dbHelp, stringVar(p, defaultDB)}
}

// defineOptions puts the options that have a flag on a flag set.
func defineOptions(fs *flag.FlagSet, opts []option) {
	for _, o := range opts {
		if o.flag == "" {
			continue
		}
		usage := o.help
		if o.env != "" {
			usage += " (env " + o.env + ")"
		}
		o.value(fs, o.flag, usage)
	}
}

// applyEnv gives each option whose flag was not set on the command line
// the value of its environment variable, when that is set: a flag wins
// over its variable.
func (e *env) applyEnv(fs *flag.FlagSet, opts []option) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, o := range opts {
		if o.env == "" || o.flag != "" && set[o.flag] {
			continue
		}
		val := strings.TrimSpace(e.getenv(o.env))
		if val == "" {
			continue
		}
		target, name := fs, o.flag
		if o.flag == "" { // a variable alone: set through a flag set of its own
			target, name = flag.NewFlagSet(o.env, flag.ContinueOnError), o.env
			o.value(target, name, o.help)
		}
		if err := target.Set(name, val); err != nil {
			return usageError("%s=%q: %v", o.env, val, err)
		}
	}
	return nil
}

// parseServe reads serve's flags and environment into a checked config.
func (e *env) parseServe(args []string) (*serveConfig, *slog.Logger, error) {
	c := &serveConfig{}
	fs := e.newFlags("serve", "[flags]")
	opts := c.options()
	defineOptions(fs, opts)
	if _, err := parse(fs, args, 0); err != nil {
		return nil, nil, err
	}
	if err := e.applyEnv(fs, opts); err != nil {
		return nil, nil, err
	}
	if err := server.ValidSegment(c.segment); err != nil {
		return nil, nil, usageError("%v", err)
	}
	var err error
	if c.limits.TrustedProxies, err = parseCIDRs("trusted-proxy", c.trusted); err != nil {
		return nil, nil, err
	}
	if c.ccAllow, err = parseCIDRs("certcentral-webhook-allow", c.ccAllowList); err != nil {
		return nil, nil, err
	}
	if c.ccAllowList != "" && c.ccSecretFile == "" {
		return nil, nil, usageError("serve: --certcentral-webhook-allow needs --certcentral-webhook-secret-file")
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
	if c.webhooks && len(storekit.ParseThresholds(c.webhookExpiring)) == 0 {
		return nil, nil, usageError("serve: --webhook-expiring-days %q: give days such as 30,7,1", c.webhookExpiring)
	}
	if c.webhooks && len(storekit.ParseThresholds(c.webhookPlanEnding)) == 0 {
		return nil, nil, usageError("serve: --webhook-plan-ending-days %q: give days such as 90,60,30,7", c.webhookPlanEnding)
	}
	if err := checkWindows("serve", c.windows); err != nil {
		return nil, nil, err
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
	if c.smtp, err = c.notices.check(e, "serve", true, c.web); err != nil {
		return nil, nil, err
	}
	if c.maxConns < 0 {
		return nil, nil, usageError("serve: --max-conns must not be negative (0: from the descriptor limit)")
	}
	switch c.logFormat {
	case "text":
		return c, slog.New(slog.NewTextHandler(e.stderr, nil)), nil
	case "json":
		return c, slog.New(slog.NewJSONHandler(e.stderr, nil)), nil
	}
	return nil, nil, usageError("serve: --log-format is text or json, not %q", c.logFormat)
}
