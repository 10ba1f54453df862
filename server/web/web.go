// Package web is the member's web page: sign in with the API credentials,
// see every order with its expiry and which order of a renewal chain is
// current, a timeline of what runs out when, download the list as CSV,
// manage one's own API keys and webhook endpoints; in English or Japanese. Server-rendered
// html/template, embedded assets, no JavaScript.
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/webhook"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// ErrRefused is what SignIn returns for credentials it does not accept,
// whatever the reason: one message for all.
var ErrRefused = errors.New("sign-in refused")

// ThrottledError is what SignIn returns when a limit refuses the attempt.
type ThrottledError struct{ Wait time.Duration }

func (e *ThrottledError) Error() string { return fmt.Sprintf("throttled for %v", e.Wait) }

// Store is what the web page needs of the store: sessions, reading the
// signed-in member's orders, the member's own keys and webhook endpoints.
// Keys are revoked only through RevokeMemberKey, and an endpoint or its
// deliveries reached only through the Member... calls, each scoped to the
// member in the store's query, so no request of one member can touch
// another's key or endpoint.
type Store interface {
	storekit.SessionStore
	storekit.OrderReader
	Keys(ctx context.Context, member string) ([]certorder.Key, error)
	AddMemberKey(ctx context.Context, memberID int64, k certorder.Key, max int) error
	RevokeMemberKey(ctx context.Context, memberID int64, id string) error
	KeysLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error)

	storekit.MemberWebhookStore
	storekit.MemberNoticeStore
	storekit.NoticeRecipientStore
	// The queue, for a webhook endpoint's deliveries: the latest
	// (kind queue.KindWebhook), a test event, one sent again.
	Jobs(ctx context.Context, l queue.List) ([]queue.Job, error)
	Enqueue(ctx context.Context, jobs ...queue.Job) ([]int64, error)
	RetryJob(ctx context.Context, kind string, memberID, subjectID, id int64) error
}

// Config is what New needs besides the store.
type Config struct {
	// SignIn checks a member's credentials with the API's refusals and
	// throttling: ErrRefused, *ThrottledError, or another error (store trouble).
	SignIn func(r *http.Request, name, key string) (certorder.Credential, error)
	// Secure says whether the request reached the service over TLS, directly
	// or through a trusted proxy; its cookies are then Secure and __Host-.
	Secure func(r *http.Request) bool
	// ClientIP is the request's client address as the limits see it.
	ClientIP func(r *http.Request) string
	// Admit applies the page's per-address limits to a request (every one
	// but the static files), saying how long to wait when it refuses:
	// the page then answers 429 with Retry-After. nil: no limits.
	Admit func(r *http.Request) (ok bool, wait time.Duration)
	// Audit, when set, records sign-ins, sign-outs and key changes in the
	// audit trail. It must not block.
	Audit func(certorder.AuditEntry)
	// SelfServiceKeysOff forbids every member to create or revoke keys here
	// (serve --member-keys=false); the store's per-member switch adds to it.
	SelfServiceKeysOff bool
	// PrivateWebhooks accepts webhook endpoints on plain http and on
	// loopback, private or link-local addresses, as the deliveries do
	// (serve --webhook-allow-private).
	PrivateWebhooks bool
	// Notices lets members add e-mail addresses for notices (serve
	// --smtp-addr): the confirmation is e-mailed. Without it the page lists
	// the addresses the operator added, and the links of earlier messages
	// (confirm, unsubscribe) still work.
	Notices bool
	// TestNotice, when set, sends a test message to an address now: each
	// active address gets a "Send a test message" button, limited with the
	// webhooks' test events (webhook.TestLimiter). Its failure says its
	// kind (a Kind() string method: mailer's Kind...), which the page shows.
	TestNotice func(ctx context.Context, a certorder.NoticeAddress) error
	// ACMEURLTemplate, when set, is an ACME directory URL with {orderId}
	// where the order number goes (serve --acme-url-template): each
	// order's page shows it for the newest order of the chain, with a copy
	// button. CheckACMEURLTemplate says whether one will do.
	ACMEURLTemplate string
	// Windows name each order's next step (serve --reissue-window-days,
	// --renewal-window-days); zero: certorder.DefaultWindows.
	Windows certorder.Windows

	Now          func() time.Time
	Logger       *slog.Logger
	SessionTTL   time.Duration // 0: DefaultSessionTTL
	PageSize     int           // orders per page; 0: DefaultPageSize
	StoreTimeout time.Duration // bound on a page's store work; 0: DefaultStoreTimeout
}

// Defaults of Config.
const (
	DefaultSessionTTL   = 12 * time.Hour
	DefaultPageSize     = 25
	DefaultStoreTimeout = 5 * time.Second
)

// Cookie names, with the __Host- prefix under TLS (see cookieName). The
// session cookie holds a random token; the store keeps its hash.
const (
	sessionCookie = "certorder_session"
	csrfCookie    = "certorder_csrf" // before sign-in: double-submit token for the sign-in form
)

type handler struct {
	store Store
	cfg   Config
	cats  map[string]*catalogue
	pages map[string]map[string]*template.Template // language -> page -> template
	tests *webhook.TestLimiter                     // test events, redeliveries and test messages per member
}

// pageNames are the templates besides the layout.
var pageNames = []string{"signin", "orders", "order", "timeline", "keys", "keycreated", "keyrevoke",
	"webhooks", "webhookcreated", "webhook", "webhookdelete", "notices", "notice", "noticelink", "notfound", "error"}

// New returns the web page's handler, meant to be mounted at "/".
func New(store Store, cfg Config) (http.Handler, error) {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.Windows == (certorder.Windows{}) {
		cfg.Windows = certorder.DefaultWindows
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
	if cfg.ClientIP == nil {
		cfg.ClientIP = func(r *http.Request) string { return r.RemoteAddr }
	}
	if cfg.ACMEURLTemplate != "" {
		if err := CheckACMEURLTemplate(cfg.ACMEURLTemplate); err != nil {
			return nil, err
		}
	}
	cats, err := loadCatalogues()
	if err != nil {
		return nil, err
	}
	h := &handler{store: store, cfg: cfg, cats: cats, pages: map[string]map[string]*template.Template{},
		tests: webhook.NewTestLimiter()}
	for lang, cat := range cats {
		h.pages[lang] = map[string]*template.Template{}
		funcs := template.FuncMap{
			"t": cat.T, "n": cat.N, "date": cat.Date, "period": cat.Period, "datetime": cat.DateTime, "day": cat.Day, "moment": cat.Moment, "stamp": cat.Stamp,
			"value": cat.Value, "num": cat.Num, "join": strings.Join,
			"deref": func(p *string) string { return *p },
		}
		for _, page := range pageNames {
			t, err := template.New(page).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+page+".html")
			if err != nil {
				return nil, err
			}
			h.pages[lang][page] = t
		}
	}
	timed := func(f http.HandlerFunc) http.Handler { return withTimeout(f, cfg.StoreTimeout) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /static/{file...}", h.static)
	mux.HandleFunc("GET /lang", h.setLanguage)
	mux.Handle("GET /{$}", timed(h.withSession(h.home)))
	mux.HandleFunc("GET /signin", h.signInPage)
	mux.Handle("POST /signin", timed(h.signIn))
	mux.Handle("POST /signout", timed(h.withSession(h.signOut)))
	mux.Handle("GET /orders", timed(h.withSession(h.orders)))
	mux.Handle("GET /orders.csv", h.withSession(h.ordersCSV)) // its batches have a deadline each
	mux.Handle("GET /orders/{id}", timed(h.withSession(h.order)))
	mux.Handle("GET /timeline", timed(h.withSession(h.timeline)))
	mux.Handle("GET /keys", timed(h.withSession(h.keys)))
	mux.Handle("POST /keys", timed(h.withSession(h.createKey)))
	mux.Handle("GET /keys/{id}/revoke", timed(h.withSession(h.revokeKeyPage)))
	mux.Handle("POST /keys/{id}/revoke", timed(h.withSession(h.revokeKey)))
	mux.Handle("GET /webhooks", timed(h.withSession(h.webhooks)))
	mux.Handle("POST /webhooks", timed(h.withSession(h.addWebhook)))
	mux.Handle("GET /webhooks/{id}", timed(h.withSession(h.webhookEndpoint)))
	mux.Handle("POST /webhooks/{id}/test", timed(h.withSession(h.testWebhook)))
	mux.Handle("POST /webhooks/{id}/disable", timed(h.withSession(h.setWebhookEnabled(false))))
	mux.Handle("POST /webhooks/{id}/enable", timed(h.withSession(h.setWebhookEnabled(true))))
	mux.Handle("GET /webhooks/{id}/delete", timed(h.withSession(h.deleteWebhookPage)))
	mux.Handle("POST /webhooks/{id}/delete", timed(h.withSession(h.deleteOwn(store.DeleteMemberEndpoint, "web WebhookDelete",
		func(id int64) string { return "/webhooks?deleted=" + strconv.FormatInt(id, 10) }))))
	mux.Handle("POST /webhooks/{id}/deliveries/{delivery}/redeliver", timed(h.withSession(h.redeliver)))
	mux.Handle("GET /notices", timed(h.withSession(h.notices)))
	mux.Handle("POST /notices", timed(h.withSession(h.addNotice)))
	mux.Handle("GET /notices/{id}", timed(h.withSession(h.noticeAddress)))
	mux.Handle("POST /notices/{id}", timed(h.withSession(h.saveNotice)))
	mux.Handle("POST /notices/{id}/test", withTimeout(h.withSession(h.testNotice), testNoticeTimeout)) // the relay's time, not the store's
	mux.Handle("POST /notices/{id}/delete", timed(h.withSession(h.deleteOwn(store.DeleteMemberNoticeAddress, "web NoticeRemove",
		func(int64) string { return "/notices?removed=1" }))))
	// The links of a message: no session; the link's signature is the authority.
	mux.Handle("GET /notices/confirm", timed(h.confirmPage))
	mux.Handle("POST /notices/confirm", timed(h.confirm))
	mux.Handle("GET /notices/unsubscribe", timed(h.unsubscribePage))
	mux.Handle("POST /notices/unsubscribe", timed(h.unsubscribe))
	mux.Handle("GET /notices/block", timed(h.blockPage))
	mux.Handle("POST /notices/block", timed(h.block))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { h.notFound(w, r, nil) })

	// Forms carry tokens; on top of them, a browser's cross-origin POST
	// (Sec-Fetch-Site, or Origin against Host) is refused outright.
	cop := http.NewCrossOriginProtection()
	// RFC 8058's one-click POSTs (a notice's unsubscribe, a confirmation's
	// refusal) come from mail clients, often from another origin (a webmail
	// sends Sec-Fetch-Site: cross-site); their signed token is the authority.
	cop.AddInsecureBypassPattern("POST /notices/unsubscribe")
	cop.AddInsecureBypassPattern("POST /notices/block")
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.errorPage(w, r, http.StatusForbidden, "error.cross_origin")
	}))
	return securityHeaders(h.limit(h.withLanguage(cop.Handler(mux))), cfg.Secure), nil
}

// withTimeout bounds a page's store work, as the API's.
func withTimeout(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// contentSecurityPolicy is every page's: no script at all (the order
// page adds the site's own when it has a copy button).
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// securityHeaders sets a strict Content-Security-Policy and the usual
// headers. Inline SVG needs nothing more: its colours come from style.css.
func securityHeaders(next http.Handler, secure func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		if secure != nil && secure(r) {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// static serves the embedded files; a directory, /static/ itself
// included, is "not found" rather than listed.
func (h *handler) static(w http.ResponseWriter, r *http.Request) {
	name := "static/" + r.PathValue("file")
	fi, err := fs.Stat(staticFiles, name)
	if err != nil || fi.IsDir() || !fs.ValidPath(name) {
		h.notFound(w, r, nil)
		return
	}
	http.ServeFileFS(w, r, staticFiles, name)
}

// langLink is one entry of the language switch.
type langLink struct {
	Lang, Name, URL string
	Current         bool
}

// view is what every page's template gets.
type view struct {
	Title     string
	Lang      string
	Member    string // empty when signed out
	CSRF      string
	Section   string // the header's current section: orders, timeline, keys, webhooks, notices
	Languages []langLink
	Data      any
}

// languageNames name each language in itself, for the switch.
var languageNames = map[string]string{"en": "English", "ja": "日本語"}

func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	cat := h.cat(r)
	v.Lang = cat.lang
	here := r.URL.RequestURI()
	if r.Method != http.MethodGet {
		here = "/"
	}
	for _, tag := range languages {
		l := tag.String()
		v.Languages = append(v.Languages, langLink{Lang: l, Name: languageNames[l], Current: l == cat.lang,
			URL: "/lang?" + url.Values{"l": {l}, "next": {here}}.Encode()})
	}
	var buf bytes.Buffer
	if err := h.pages[cat.lang][page].ExecuteTemplate(&buf, "layout", v); err != nil {
		h.cfg.Logger.Error("web: rendering", "page", page, "err", err)
		http.Error(w, cat.S("error.internal"), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// signedIn fills the view's member part from the session.
func signedIn(v view, s *certorder.Session) view {
	if s != nil {
		v.Member, v.CSRF = s.Member, s.CSRF
	}
	return v
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	h.render(w, r, http.StatusNotFound, "notfound", signedIn(view{Title: h.cat(r).S("notfound.title")}, s))
}

// errorPage answers status with the message key, on a page of its own.
func (h *handler) errorPage(w http.ResponseWriter, r *http.Request, status int, key string) {
	cat := h.cat(r)
	h.render(w, r, status, "error", view{Title: cat.S("error.title"), Data: cat.S(key)})
}

func (h *handler) serverError(w http.ResponseWriter, r *http.Request, err error) {
	h.cfg.Logger.Error("web", "err", err)
	status := http.StatusInternalServerError
	if errors.Is(err, certorder.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		status = http.StatusServiceUnavailable
	}
	h.errorPage(w, r, status, "error.unavailable")
}

func (h *handler) secure(r *http.Request) bool { return h.cfg.Secure != nil && h.cfg.Secure(r) }

// cookieName is the name of a cookie as this request carries it. Under
// TLS the __Host- prefix makes the browser refuse the cookie unless this
// host set it, Secure, for Path=/ and without Domain: a sibling domain or
// a plain-HTTP attacker cannot plant a session or a CSRF token.
func (h *handler) cookieName(r *http.Request, name string) string {
	if h.secure(r) {
		return "__Host-" + name
	}
	return name
}

func (h *handler) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: h.cookieName(r, name), Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: h.secure(r)}
}

// readCookie returns the value of the request's cookie name, "" if none.
func (h *handler) readCookie(r *http.Request, name string) string {
	c, err := r.Cookie(h.cookieName(r, name))
	if err != nil {
		return ""
	}
	return c.Value
}

// session returns the request's valid session, or nil.
func (h *handler) session(r *http.Request) (*certorder.Session, error) {
	token := h.readCookie(r, sessionCookie)
	if token == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.StoreTimeout)
	defer cancel()
	s, err := h.store.FindSession(ctx, certorder.HashKey(token))
	if errors.Is(err, certorder.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !s.Valid(h.cfg.Now()) {
		return nil, nil
	}
	return &s, nil
}

// withSession runs next for a signed-in member; others are sent to sign in.
func (h *handler) withSession(next func(http.ResponseWriter, *http.Request, *certorder.Session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := h.session(r)
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		if s == nil {
			if h.readCookie(r, sessionCookie) != "" {
				http.SetCookie(w, h.cookie(r, sessionCookie, "", -1))
				http.Redirect(w, r, "/signin?expired=1", http.StatusSeeOther)
				return
			}
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		next(w, r, s)
	}
}

// home sends a signed-in member to the orders; withSession sends others to sign in.
func (h *handler) home(w http.ResponseWriter, r *http.Request, _ *certorder.Session) {
	http.Redirect(w, r, "/orders", http.StatusSeeOther)
}

// audit records a web action of a member, when the audit trail is on.
func (h *handler) audit(r *http.Request, member, action string) {
	if h.cfg.Audit != nil {
		h.cfg.Audit(certorder.AuditEntry{Time: h.cfg.Now(), Member: member, Action: action, ClientIP: h.cfg.ClientIP(r)})
	}
}
