// Package web is the member's web page: sign in with the API credentials,
// see every order with its expiry, and follow renewals. Server-rendered
// html/template, embedded assets, no JavaScript.
package web

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/wire"
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

// Store is what the web page needs of the store: sessions, and reading
// the signed-in member's orders.
type Store interface {
	certorder.SessionStore
	certorder.OrderReader
}

// Config is what New needs besides the store.
type Config struct {
	// SignIn checks a member's credentials with the API's refusals and
	// throttling: ErrRefused, *ThrottledError, or another error (store trouble).
	SignIn func(r *http.Request, name, key string) (certorder.Credential, error)
	// Secure says whether the request reached the service over TLS, directly
	// or through a trusted proxy; its cookies are then Secure.
	Secure       func(r *http.Request) bool
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

// Cookie names. The session cookie holds a random token; the store keeps its hash.
const (
	sessionCookie = "certorder_session"
	csrfCookie    = "certorder_csrf" // before sign-in: double-submit token for the sign-in form
)

type handler struct {
	store Store
	cfg   Config
	pages map[string]*template.Template
}

// New returns the web page's handler, meant to be mounted at "/".
func New(store Store, cfg Config) (http.Handler, error) {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
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
	h := &handler{store: store, cfg: cfg, pages: map[string]*template.Template{}}
	funcs := template.FuncMap{"date": formatDate, "datetime": formatDateTime, "join": strings.Join}
	for _, page := range []string{"signin", "orders", "order", "notfound"} {
		t, err := template.New(page).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, err
		}
		h.pages[page] = t
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.FileServerFS(staticFiles))
	mux.HandleFunc("GET /{$}", h.withSession(h.home))
	mux.HandleFunc("GET /signin", h.signInPage)
	mux.HandleFunc("POST /signin", h.signIn)
	mux.HandleFunc("POST /signout", h.withSession(h.signOut))
	mux.HandleFunc("GET /orders", h.withSession(h.orders))
	mux.HandleFunc("GET /orders/{id}", h.withSession(h.order))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { h.notFound(w, r, nil) })
	return securityHeaders(withTimeout(mux, cfg.StoreTimeout), cfg.Secure), nil
}

// withTimeout bounds every page's store work, as the API's.
func withTimeout(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// securityHeaders sets a strict Content-Security-Policy and the usual headers.
func securityHeaders(next http.Handler, secure func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
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

// view is what every page's template gets.
type view struct {
	Title  string
	Member string // empty when signed out
	CSRF   string
	Data   any
}

func (h *handler) render(w http.ResponseWriter, status int, page string, v view) {
	var buf bytes.Buffer
	if err := h.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		h.cfg.Logger.Error("web: rendering", "page", page, "err", err)
		http.Error(w, "Something went wrong.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	v := view{Title: "Not found"}
	if s != nil {
		v.Member, v.CSRF = s.Member, s.CSRF
	}
	h.render(w, http.StatusNotFound, "notfound", v)
}

func (h *handler) serverError(w http.ResponseWriter, err error) {
	h.cfg.Logger.Error("web", "err", err)
	status := http.StatusInternalServerError
	if errors.Is(err, certorder.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		status = http.StatusServiceUnavailable
	}
	http.Error(w, "The service cannot answer right now. Please try again later.", status)
}

func (h *handler) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: h.cfg.Secure != nil && h.cfg.Secure(r)}
}

// session returns the request's valid session, or nil.
func (h *handler) session(r *http.Request) (*certorder.Session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	s, err := h.store.FindSession(r.Context(), certorder.HashKey(c.Value))
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
			h.serverError(w, err)
			return
		}
		if s == nil {
			if _, err := r.Cookie(sessionCookie); err == nil {
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

type signInData struct {
	Name, Error, Note string
}

// signInPage shows the form, with a fresh double-submit CSRF token.
func (h *handler) signInPage(w http.ResponseWriter, r *http.Request) {
	data := signInData{}
	if r.URL.Query().Get("expired") != "" {
		data.Note = "Your session has ended. Please sign in again."
	}
	h.signInForm(w, r, http.StatusOK, data)
}

func (h *handler) signInForm(w http.ResponseWriter, r *http.Request, status int, data signInData) {
	token, err := certorder.NewToken()
	if err != nil {
		h.serverError(w, err)
		return
	}
	http.SetCookie(w, h.cookie(r, csrfCookie, token, 3600))
	h.render(w, status, "signin", view{Title: "Sign in", CSRF: token, Data: data})
}

// sameToken compares two tokens in constant time; empty never matches.
func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func (h *handler) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	c, err := r.Cookie(csrfCookie)
	if err != nil || !sameToken(c.Value, r.PostFormValue("csrf")) {
		h.signInForm(w, r, http.StatusForbidden, signInData{Error: "The form had expired. Please sign in again."})
		return
	}
	name := r.PostFormValue("name")
	cred, err := h.cfg.SignIn(r, name, r.PostFormValue("key"))
	var throttled *ThrottledError
	switch {
	case errors.As(err, &throttled):
		w.Header().Set("Retry-After", strconv.Itoa(int(throttled.Wait.Seconds())+1))
		h.signInForm(w, r, http.StatusTooManyRequests, signInData{Name: name,
			Error: fmt.Sprintf("Too many attempts. Please try again in %s.", roundWait(throttled.Wait))})
		return
	case errors.Is(err, ErrRefused):
		h.signInForm(w, r, http.StatusUnauthorized, signInData{Name: name,
			Error: "Sign-in failed. Check your member ID and API key."})
		return
	case err != nil:
		h.serverError(w, err)
		return
	}
	token, err := certorder.NewToken()
	if err != nil {
		h.serverError(w, err)
		return
	}
	csrf, err := certorder.NewToken()
	if err != nil {
		h.serverError(w, err)
		return
	}
	now := h.cfg.Now()
	s := certorder.Session{TokenHash: certorder.HashKey(token), MemberID: cred.MemberID, KeyID: cred.KeyID,
		CSRF: csrf, Created: now, Expires: now.Add(h.cfg.SessionTTL)}
	if err := h.store.AddSession(r.Context(), s); err != nil {
		h.serverError(w, err)
		return
	}
	if err := h.store.PruneSessions(r.Context(), now); err != nil {
		h.cfg.Logger.Warn("web: pruning sessions", "err", err)
	}
	http.SetCookie(w, h.cookie(r, sessionCookie, token, int(h.cfg.SessionTTL.Seconds())))
	http.SetCookie(w, h.cookie(r, csrfCookie, "", -1))
	http.Redirect(w, r, "/orders", http.StatusSeeOther)
}

func roundWait(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%d seconds", int(d.Seconds())+1)
	}
	return fmt.Sprintf("%d minutes", int(d.Minutes())+1)
}

func (h *handler) signOut(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if !sameToken(s.CSRF, r.PostFormValue("csrf")) {
		http.Error(w, "The form had expired. Go back, reload the page and try again.", http.StatusForbidden)
		return
	}
	if err := h.store.DeleteSession(r.Context(), s.TokenHash); err != nil {
		h.serverError(w, err)
		return
	}
	http.SetCookie(w, h.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// row is one order of the orders page.
type row struct {
	ID         int64
	CommonName string
	Product    string
	Status     string
	ValidTill  string
	Days       int
	DaysText   string
	Urgency    string // "expired", "expiring" or ""
	RenewedBy  int64
}

// info reads the stored document of an order with the derived fields,
// in the spec's types.
func (h *handler) info(o *certorder.Order) (*certorder.OrderInfo, error) {
	var c certorder.OrderInfo
	if err := json.Unmarshal(o.Doc, &c); err != nil {
		return nil, fmt.Errorf("order %d: %w", o.ID, err)
	}
	c.IsRenewed = o.RenewedBy != 0
	c.WasRenewedByOrderID = certorder.Int{Value: o.RenewedBy, Valid: c.IsRenewed}
	c.Certificate.DaysRemaining = certorder.Int{Value: int64(certorder.DaysRemaining(o.ValidTill, h.cfg.Now())), Valid: true}
	return &c, nil
}

func urgency(days int) (text, class string) {
	switch {
	case days < 0:
		return fmt.Sprintf("expired %d days ago", -days), "expired"
	case days <= 30:
		return fmt.Sprintf("%d (expiring soon)", days), "expiring"
	}
	return strconv.Itoa(days), ""
}

type sortOption struct {
	Value, Label string
	Selected     bool
}

type ordersData struct {
	Query            string
	Sorts            []sortOption
	Rows             []row
	Total            int
	Page, Pages      int
	PrevURL, NextURL string
}

// sorts are the orders page's sort options, by their value in the URL.
var sorts = []struct {
	value, label string
	sort         certorder.OrderSort
}{
	{"order", "Order number", certorder.SortByID},
	{"expiry", "Expiry, soonest first", certorder.SortByExpiry},
	{"-expiry", "Expiry, latest first", certorder.SortByExpiryDesc},
}

func (h *handler) orders(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	q := r.URL.Query()
	query := certorder.Cut(strings.TrimSpace(q.Get("q")), 200)
	sortBy := sorts[0].value
	oq := certorder.OrderQuery{MemberID: s.MemberID, Search: query, Limit: h.cfg.PageSize}
	data := ordersData{Query: query}
	for _, o := range sorts {
		if o.value == q.Get("sort") {
			sortBy, oq.Sort = o.value, o.sort
		}
	}
	for _, o := range sorts {
		data.Sorts = append(data.Sorts, sortOption{o.value, o.label, o.value == sortBy})
	}
	var err error
	if data.Total, err = h.store.CountOrders(r.Context(), oq); err != nil {
		h.serverError(w, err)
		return
	}
	data.Pages = max(1, (data.Total+h.cfg.PageSize-1)/h.cfg.PageSize)
	data.Page, _ = strconv.Atoi(q.Get("page"))
	data.Page = min(max(data.Page, 1), data.Pages)
	oq.Offset = (data.Page - 1) * h.cfg.PageSize
	orders, err := h.store.ListOrders(r.Context(), oq)
	if err != nil {
		h.serverError(w, err)
		return
	}
	now := h.cfg.Now()
	for _, o := range orders {
		c, err := h.info(o)
		if err != nil {
			h.serverError(w, err)
			return
		}
		rw := row{ID: o.ID, CommonName: o.CommonName, Product: c.Product.Name,
			Status: o.Status, ValidTill: o.ValidTill, Days: certorder.DaysRemaining(o.ValidTill, now), RenewedBy: o.RenewedBy}
		rw.DaysText, rw.Urgency = urgency(rw.Days)
		data.Rows = append(data.Rows, rw)
	}
	pageURL := func(p int) string {
		v := url.Values{"page": {strconv.Itoa(p)}, "sort": {sortBy}}
		if query != "" {
			v.Set("q", query)
		}
		return "/orders?" + v.Encode()
	}
	if data.Page > 1 {
		data.PrevURL = pageURL(data.Page - 1)
	}
	if data.Page < data.Pages {
		data.NextURL = pageURL(data.Page + 1)
	}
	h.render(w, http.StatusOK, "orders", view{Title: "Your orders", Member: s.Member, CSRF: s.CSRF, Data: data})
}

// link is one order of a renewal chain.
type link struct {
	ID        int64
	ValidTill string
	This      bool // the order the page shows
	Current   bool // the newest of the chain
}

type orderData struct {
	ID        int64
	Order     *certorder.OrderInfo
	Chain     []link
	IsCurrent bool
	DaysText  string
	Urgency   string
}

func (h *handler) order(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	id, ok := wire.ParseOrderID([]byte(r.PathValue("id")))
	if !ok {
		h.notFound(w, r, s)
		return
	}
	// The chain is read within the member's orders: another member's order
	// is "not found", exactly like one that does not exist, and never read.
	chain, err := h.store.RenewalChain(r.Context(), s.MemberID, id)
	if errors.Is(err, certorder.ErrNotFound) {
		h.notFound(w, r, s)
		return
	}
	if err != nil {
		h.serverError(w, err)
		return
	}
	o, err := h.store.FindOrder(r.Context(), id)
	if err != nil {
		h.serverError(w, err)
		return
	}
	c, err := h.info(o)
	if err != nil {
		h.serverError(w, err)
		return
	}
	data := orderData{ID: id, Order: c}
	for i, l := range chain {
		data.Chain = append(data.Chain, link{ID: l.ID, ValidTill: l.ValidTill, This: l.ID == id, Current: i == len(chain)-1})
	}
	data.IsCurrent = chain[len(chain)-1].ID == id
	data.DaysText, data.Urgency = urgency(int(c.Certificate.DaysRemaining.Value))
	h.render(w, http.StatusOK, "order", view{Title: fmt.Sprintf("Order %d", id), Member: s.Member, CSRF: s.CSRF, Data: data})
}

func formatDate(t certorder.Time) string {
	if t.IsZero() {
		if t.Raw == "" {
			return "—"
		}
		return t.Raw
	}
	return t.UTC().Format("2 Jan 2006")
}

func formatDateTime(t certorder.Time) string {
	if t.IsZero() {
		if t.Raw == "" {
			return "—"
		}
		return t.Raw
	}
	return t.Format("2 Jan 2006, 15:04 -07:00")
}
