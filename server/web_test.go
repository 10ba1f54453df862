package server_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/storetest"
)

// browser is an HTTP client with cookies that does not follow redirects.
type browser struct {
	t    testing.TB
	base string
	hc   *http.Client
}

func newBrowser(t testing.TB, base string, transport http.RoundTripper) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, hc: &http.Client{Jar: jar, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	body   string
	header http.Header
}

func (b *browser) get(path string) page {
	b.t.Helper()
	resp, err := b.hc.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	resp, err := b.hc.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

func read(t testing.TB, resp *http.Response) page {
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{resp.StatusCode, string(body), resp.Header}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the page's forms.
func (p page) csrf(t testing.TB) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", p.body)
	}
	return m[1]
}

// signIn signs in through the form and returns the page it lands on.
func (b *browser) signIn(name, key string) page {
	b.t.Helper()
	form := b.get("/signin")
	return b.post("/signin", url.Values{"csrf": {form.csrf(b.t)}, "name": {name}, "key": {key}})
}

func webFixture(t *testing.T, cfg server.Config) (*fixture, string) {
	cfg.Web = true
	f := newFixture(t, testdb.SQLite(t), cfg)
	return f, strings.TrimSuffix(f.url, "/api/digicert/")
}

func TestWebSignedOut(t *testing.T) {
	t.Parallel()
	_, base := webFixture(t, server.Config{})
	b := newBrowser(t, base, nil)
	for _, path := range []string{"/", "/orders", "/orders/1001"} {
		if p := b.get(path); p.status != http.StatusSeeOther || p.header.Get("Location") != "/signin" {
			t.Errorf("%s signed out: %d %s", path, p.status, p.header.Get("Location"))
		}
	}
	p := b.get("/signin")
	if p.status != 200 || !strings.Contains(p.body, `<label for="name">AccessName (member ID)</label>`) ||
		!strings.Contains(p.body, `<label for="key">AccessKey (API key)</label>`) {
		t.Fatalf("sign-in page: %d\n%s", p.status, p.body)
	}
	for h, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; style-src 'self'",
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-store",
	} {
		if !strings.HasPrefix(p.header.Get(h), want) {
			t.Errorf("%s = %q, want %q...", h, p.header.Get(h), want)
		}
	}
	if css := b.get("/static/style.css"); css.status != 200 || !strings.Contains(css.body, "font") {
		t.Errorf("stylesheet: %d", css.status)
	}
	// No directory is listed: /static/ itself, or any path that names a directory.
	for _, path := range []string{"/static/", "/static", "/static//", "/static/nope.css", "/static/../static/", "/static/./"} {
		p := b.get(path)
		for i := 0; i < 3 && p.status/100 == 3; i++ { // the mux cleans paths by redirecting
			p = b.get(p.header.Get("Location"))
		}
		if p.status != http.StatusNotFound || strings.Contains(p.body, `href="style.css"`) {
			t.Errorf("%s: %d\n%s", path, p.status, p.body)
		}
	}
	// The API still answers JSON, and an unknown page is an HTML 404.
	if status, _ := do(t, http.MethodPost, base+"/api/digicert/", `{}`); status != 400 {
		t.Errorf("API with the web page on: %d", status)
	}
	if status, got := do(t, http.MethodPost, base+"/api/sectigo/", `{}`); status != 404 || got != `{"error_message":"Error(102) path is failed."}` {
		t.Errorf("wrong CA segment with the web page on: %d %s", status, got)
	}
	if p := b.get("/nope"); p.status != 404 || !strings.Contains(p.body, "Not found") {
		t.Errorf("unknown page: %d", p.status)
	}
}

func TestWebSignInAndPages(t *testing.T) {
	t.Parallel()
	feb10 := time.Date(2026, 2, 10, 9, 0, 0, 0, time.UTC) // order 1002 ends within 30 days, but it was renewed
	f, base := webFixture(t, server.Config{Now: func() time.Time { return feb10 }})
	// Two orders nobody renewed: one ending within 30 days, one long expired.
	if _, err := f.store.ImportOrders(context.Background(), "alice", storetest.Orders(t,
		storetest.OrderJSON(1010, 0, "2026-03-01"), storetest.OrderJSON(1011, 0, "2020-01-01"))); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil)
	p := b.signIn("alice", f.aliceKey)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/orders" {
		t.Fatalf("sign-in: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	u, _ := url.Parse(base)
	var session *http.Cookie
	for _, c := range b.hc.Jar.Cookies(u) {
		if c.Name == "certorder_session" {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie")
	}
	// The cookie's attributes, as the server set them.
	set := p.header.Values("Set-Cookie")
	if !strings.Contains(strings.Join(set, "\n"), "certorder_session=") ||
		!regexp.MustCompile(`certorder_session=[^;]+; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict`).MatchString(strings.Join(set, "\n")) {
		t.Fatalf("session cookie: %v", set)
	}

	// Renewed orders are hidden by default: what is left is current.
	orders := b.get("/orders")
	for _, want := range []string{`<a href="/orders/1003">1003</a>`, `old.example.com`,
		`<span class="current">Current</span> (renews order <a href="/orders/1002">1002</a>)`,
		`class="num expiring">Within its reissue window: 19 days left<`, `class="num expired">Expired 2232 days ago<`,
		`3 orders (renewed orders hidden)`, `Signed in as <strong>alice</strong>`, `<td data-label="Certificate ends">1 Mar 2026<br>`,
		`href="/orders.csv?sort=order"`} {
		if !strings.Contains(orders.body, want) {
			t.Errorf("orders page lacks %s", want)
		}
	}
	for _, unwanted := range []string{`href="/orders/1001"`, `href="/orders/1002">1002</a></td>`, "2001", "2020-01-01"} {
		if strings.Contains(orders.body, unwanted) {
			t.Errorf("orders page shows %s", unwanted)
		}
	}
	// The toggle shows renewed orders: never expired or expiring, each
	// pointing to the order that renewed it and to the current one.
	all := b.get("/orders?renewed=1")
	for _, want := range []string{`5 orders<`,
		`<td data-label="Order" class="num"><a href="/orders/1001">1001</a></td>`,
		`Renewed by order <a href="/orders/1002">1002</a>; current order <a href="/orders/1003">1003</a>`,
		`Renewed by order <a href="/orders/1003">1003</a></td>`,
		`<input id="renewed" name="renewed" type="checkbox" value="1" checked>`, `href="/orders.csv?renewed=1&amp;sort=order"`} {
		if !strings.Contains(all.body, want) {
			t.Errorf("orders page with renewed orders lacks %s", want)
		}
	}
	if n := strings.Count(all.body, `class="num renewed">Renewed<`); n != 2 {
		t.Errorf("%d orders read \"Renewed\", want 2", n)
	}
	if strings.Count(all.body, `class="num expiring"`) != 1 || strings.Count(all.body, `class="num expired"`) != 1 {
		t.Errorf("renewed orders flagged:\n%s", all.body)
	}

	order := b.get("/orders/1001")
	order.body = html.UnescapeString(order.body)
	for _, want := range []string{`<h1>Order 1001</h1>`, `<strong>Order 1001</strong> (this order)`, `<a href="/orders/1002">Order 1002</a>`,
		`<a href="/orders/1003">Order 1003</a> <span class="current">— current</span>`, `<summary>Certificate signing request</summary>`,
		`The current order of its renewal chain is <a href="/orders/1003">Order 1003</a>`,
		`old.example.com, www.old.example.com`, `2 Jan 2019, 10:11 (UTC+09:00)`, `3 Jan 2019 to 1 Jan 2020`, `custom_profile`, `8800123`,
		`<dt>Wildcard names purchased</dt><dd>not stated</dd>`, `<dt>Single names purchased</dt><dd>2</dd>`,
		`<dd class="renewed">Renewed</dd>`, `valid till 1 Mar 2026`} {
		if !strings.Contains(order.body, want) {
			t.Errorf("order page lacks %s", want)
		}
	}
	if strings.Contains(order.body, "—</dd>") || regexp.MustCompile(`class="(expired|expiring)"|days left|days ago`).MatchString(order.body) {
		t.Errorf("order page shows a dash or an expiry for a renewed order:\n%s", order.body)
	}
	current := b.get("/orders/1003")
	if !strings.Contains(current.body, `<h1>Order 1003 <span class="current">(current)</span></h1>`) ||
		!strings.Contains(current.body, `<a href="/orders/1001">Order 1001</a>`) {
		t.Errorf("the current order's page:\n%s", current.body)
	}

	// Another member's order, by URL guessing, is "not found" like a missing one.
	theirs, missing := b.get("/orders/2001"), b.get("/orders/999999")
	if theirs.status != 404 || strings.ReplaceAll(theirs.body, "2001", "999999") != missing.body || b.get("/orders/abc").status != 404 {
		t.Errorf("another member's order: %d", theirs.status)
	}

	// Filter and sort.
	if p := b.get("/orders?q=OLD.example&sort=-expiry&renewed=1"); !regexp.MustCompile(`(?s)1003.*1002.*1001`).MatchString(p.body) {
		t.Errorf("sorted by expiry, latest first:\n%s", p.body)
	}
	if p := b.get("/orders?q=nothing-like-this"); !strings.Contains(p.body, "No order matches") {
		t.Errorf("filter with no match:\n%s", p.body)
	}

	// Sign out: the form's token is required; afterwards the session is gone.
	if p := b.post("/signout", url.Values{"csrf": {"forged"}}); p.status != http.StatusForbidden {
		t.Errorf("sign-out with a bad token: %d", p.status)
	}
	if p := b.post("/signout", url.Values{"csrf": {orders.csrf(t)}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.status)
	}
	if _, err := f.store.FindSession(context.Background(), certorder.HashKey(session.Value)); err == nil {
		t.Error("the session outlived sign-out")
	}
	if p := b.get("/orders"); p.status != http.StatusSeeOther {
		t.Errorf("after sign-out: %d", p.status)
	}
}

func TestWebRefusals(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	b := newBrowser(t, base, nil)
	// One message and status for every wrong credential.
	for _, creds := range [][2]string{{"alice", f.aliceKey + "x"}, {"mallory", f.aliceKey}, {"carol", f.disabledMemberKey},
		{"alice", f.revokedKey}, {"alice", "not a key"}, {"", ""}} {
		p := b.signIn(creds[0], creds[1])
		msg := regexp.MustCompile(`role="alert">([^<]*)<`).FindStringSubmatch(p.body)
		if p.status != http.StatusUnauthorized || msg == nil || msg[1] != "Sign-in failed. Check your AccessName and AccessKey." {
			t.Fatalf("%v: %d %v", creds, p.status, msg)
		}
	}
	// A refused sign-in puts the Member ID back, but never a key pasted
	// into it (nor anything that cannot be a member name).
	for i, tc := range []struct {
		name   string
		echoed bool
	}{{"mallory", true}, {f.aliceKey, false}, {strings.ToUpper(f.aliceKey), false}, {`alice"><b>`, false}} {
		p := b.signIn(tc.name, "wrong")
		got := regexp.MustCompile(`name="name"[^>]*value="([^"]*)"`).FindStringSubmatch(p.body)
		if strings.Contains(strings.ToLower(p.body), strings.ToLower(f.aliceKey)) || tc.echoed != (got != nil && got[1] == tc.name) {
			t.Errorf("refused sign-in %d: the name is echoed %v, want %v (the key: %v)", i, !tc.echoed, tc.echoed,
				strings.Contains(strings.ToLower(p.body), strings.ToLower(f.aliceKey)))
		}
	}
	// A sign-in without the form's token, or with another one, is refused.
	form := b.get("/signin")
	if p := b.post("/signin", url.Values{"csrf": {"forged"}, "name": {"alice"}, "key": {f.aliceKey}}); p.status != http.StatusForbidden {
		t.Errorf("forged token: %d", p.status)
	}
	fresh := newBrowser(t, base, nil)
	if p := fresh.post("/signin", url.Values{"csrf": {form.csrf(t)}, "name": {"alice"}, "key": {f.aliceKey}}); p.status != http.StatusForbidden {
		t.Errorf("token without its cookie: %d", p.status)
	}
}

func TestWebSessionEnds(t *testing.T) {
	t.Parallel()
	clk := &clock{t: today}
	f, base := webFixture(t, server.Config{Now: clk.Now})
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	if p := b.get("/orders"); p.status != 200 {
		t.Fatalf("orders: %d", p.status)
	}
	clk.Advance(12*time.Hour + time.Second)
	if p := b.get("/orders"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/signin?expired=1" {
		t.Fatalf("expired session: %d %s", p.status, p.header.Get("Location"))
	}
	if p := b.get("/signin?expired=1"); !strings.Contains(p.body, "Your session has ended") {
		t.Error("no note on the sign-in page")
	}
	// A revoked key ends the sessions opened with it, on the next request.
	b.signIn("alice", f.aliceKey)
	if p := b.get("/orders"); p.status != 200 {
		t.Fatalf("orders: %d", p.status)
	}
	id, _ := certorder.KeyID(f.aliceKey)
	if err := f.store.RevokeKey(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/orders"); p.status != http.StatusSeeOther {
		t.Fatalf("session of a revoked key: %d", p.status)
	}
}

// A session opened on one instance is valid on another sharing the store.
func TestWebSessionAcrossInstances(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn, server.Config{Web: true})
		other, err := server.New(f.store, server.Config{CASegment: "digicert", Web: true, Now: func() time.Time { return today }})
		if err != nil {
			t.Fatal(err)
		}
		srv2 := httptest.NewServer(other)
		defer srv2.Close()
		a := newBrowser(t, strings.TrimSuffix(f.url, "/api/digicert/"), nil)
		a.signIn("alice", f.aliceKey)
		b := newBrowser(t, srv2.URL, nil)
		u, _ := url.Parse(a.base)
		u2, _ := url.Parse(srv2.URL)
		b.hc.Jar.SetCookies(u2, a.hc.Jar.Cookies(u))
		if p := b.get("/orders"); p.status != 200 || !strings.Contains(p.body, "1003") {
			t.Fatalf("the other instance: %d", p.status)
		}
	})
}

func TestWebThrottled(t *testing.T) {
	t.Parallel()
	clk := &clock{t: today}
	f, base := webFixture(t, server.Config{Now: clk.Now, Limits: server.Limits{AuthFailures: 2, AuthFailWindow: time.Minute, AuthLockout: time.Minute}})
	b := newBrowser(t, base, nil)
	b.signIn("alice", "wrong")
	b.signIn("alice", "wrong")
	p := b.signIn("alice", f.aliceKey)
	if p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "Too many attempts") {
		t.Fatalf("after two failures: %d", p.status)
	}
	// The API shares the lockout.
	if status, _ := f.post(t, f.alice("Auth")); status != 429 {
		t.Fatalf("API after web failures: %d", status)
	}
	clk.Advance(time.Minute + time.Second)
	if p := b.signIn("alice", f.aliceKey); p.status != http.StatusSeeOther {
		t.Fatalf("after the lockout: %d", p.status)
	}
}

func TestWebPagination(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	var docs []string
	for i := range 30 {
		docs = append(docs, storetest.OrderJSON(int64(5000+i), 0, "2031-01-01"))
	}
	if _, err := f.store.ImportOrders(context.Background(), "alice", storetest.Orders(t, docs...)); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	p1 := b.get("/orders?renewed=1")
	if !strings.Contains(p1.body, "33 orders page 1 of 2") || !strings.Contains(p1.body, `href="/orders?page=2&amp;renewed=1&amp;sort=order" rel="next"`) {
		t.Fatalf("page 1:\n%s", p1.body)
	}
	p2 := b.get("/orders?page=2&sort=order&renewed=1")
	if !strings.Contains(p2.body, "5029") || strings.Contains(p2.body, ">1001<") || !strings.Contains(p2.body, `rel="prev"`) {
		t.Fatalf("page 2:\n%s", p2.body)
	}
}

// Under TLS the cookie is Secure and HSTS is on.
func TestWebTLS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.SQLite(t), server.Config{})
	h, err := server.New(f.store, server.Config{CASegment: "digicert", Web: true, Now: func() time.Time { return today }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	defer srv.Close()
	b := newBrowser(t, srv.URL, srv.Client().Transport)
	p := b.signIn("alice", f.aliceKey)
	if !strings.Contains(strings.Join(p.header.Values("Set-Cookie"), "\n"), "; Secure") ||
		p.header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("over TLS: %v %q", p.header.Values("Set-Cookie"), p.header.Get("Strict-Transport-Security"))
	}
}

// Behind a trusted TLS-terminating proxy the cookie is Secure; a peer that
// is not trusted cannot claim TLS.
func TestWebSecureBehindProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		trusted []netip.Prefix
		secure  bool
	}{{loopback, true}, {nil, false}} {
		f, base := webFixture(t, server.Config{Limits: server.Limits{TrustedProxies: tc.trusted}})
		b := newBrowser(t, base, headerTransport{"X-Forwarded-Proto": "https"})
		p := b.signIn("alice", f.aliceKey)
		cookies := strings.Join(p.header.Values("Set-Cookie"), "\n")
		if strings.Contains(cookies, "; Secure") != tc.secure || (p.header.Get("Strict-Transport-Security") != "") != tc.secure {
			t.Errorf("trusted %v: cookies %q, HSTS %q", tc.trusted, cookies, p.header.Get("Strict-Transport-Security"))
		}
	}
}

// headerTransport adds headers to every request, as a proxy would.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Orders awaiting issuance are on every page, with their status and no
// expiry: the list, their own page, the chain that leads to them, the
// timeline and the CSV; in both languages. OrderInfo answers what was
// stored and nothing more.
func TestWebPendingOrders(t *testing.T) {
	t.Parallel()
	feb10 := time.Date(2026, 2, 10, 9, 0, 0, 0, time.UTC)
	f, base := webFixture(t, server.Config{Now: func() time.Time { return feb10 }})
	if _, err := f.store.ImportOrders(context.Background(), "alice", storetest.Orders(t,
		storetest.OrderJSON(1020, 1021, "2026-03-01"), storetest.PendingJSON(1021, "pending"),
		storetest.PendingJSON(1030, "canceled"))); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)

	list := b.get("/orders")
	for _, want := range []string{`<span class="badge pending">pending</span>`, `class="num pending">Awaiting issuance<`,
		`<span class="badge ended">canceled</span>`, `class="num ended">Never issued<`,
		`<td data-label="Certificate ends">not stated<br>`, `<span class="next none">Awaiting issuance by your ACME client</span>`} {
		if !strings.Contains(list.body, want) {
			t.Errorf("orders page lacks %s", want)
		}
	}
	order := b.get("/orders/1021")
	for _, want := range []string{`<h1>Order 1021 <span class="current">(current)</span></h1>`,
		`<span class="badge">pending</span> Awaiting issuance`, `<a href="/orders/1020">Order 1020</a>, valid till 1 Mar 2026`,
		`<strong>Order 1021</strong> (this order) <span class="current">— current</span>, <span class="status pending">pending</span>`,
		`<dd class="pending">Awaiting issuance</dd>`, `host1021.example.com`,
		// Who acts, and no "not stated to not stated" for the dates it lacks.
		`Awaiting issuance: your ACME client (certbot, lego, acme.sh, ...) gets the certificate issued when it next runs`,
		`<dt>Plan (contract)</dt><dd>not stated</dd>`, `<dt>Certificate valid</dt><dd>not stated</dd>`} {
		if !strings.Contains(html.UnescapeString(order.body), want) {
			t.Errorf("pending order page lacks %s", want)
		}
	}
	if regexp.MustCompile(`days left|days ago|class="(expired|expiring)"|not stated to`).MatchString(order.body) {
		t.Errorf("the pending order page counts days:\n%s", order.body)
	}
	if old := b.get("/orders/1020"); !strings.Contains(old.body, `<a href="/orders/1021">Order 1021</a> <span class="current">— current</span>, <span class="status pending">pending</span>`) {
		t.Errorf("the renewed order's chain does not lead to the pending one:\n%s", old.body)
	}
	if tl := b.get("/timeline"); !strings.Contains(tl.body, `<h2 class="tl-group">Awaiting issuance</h2>`) ||
		!strings.Contains(tl.body, `<span class="tl-when pending">Awaiting issuance</span>`) {
		t.Errorf("timeline:\n%s", tl.body)
	}
	csv := b.get("/orders.csv").body
	for _, want := range []string{"1021,host1021.example.com,Basic,pending,,,Awaiting issuance,,1020", "1030,host1030.example.com,Basic,canceled,,,Never issued,,"} {
		if !strings.Contains(csv, want) {
			t.Errorf("CSV lacks %q:\n%s", want, csv)
		}
	}
	b.get("/lang?l=ja&next=/orders/1021")
	if ja := b.get("/orders/1021"); !strings.Contains(ja.body, "発行待ち") {
		t.Errorf("Japanese pending order page lacks 発行待ち")
	}

	// The API: the stored document, without days_remaining or any date it lacks.
	status, got := do(t, http.MethodPost, f.url, `{"AccessName":"alice","AccessKey":"`+f.aliceKey+`","action":"OrderInfo","orderId":1021}`)
	if status != 200 || !strings.Contains(got, `"status":"pending"`) || !strings.Contains(got, `"is_renewed":false`) {
		t.Fatalf("OrderInfo 1021: %d %s", status, got)
	}
	for _, absent := range []string{"days_remaining", "valid_till", "valid_from", "date_issued", "serial_number", "thumbprint", `""`, "0001-01-01"} {
		if strings.Contains(got, absent) {
			t.Errorf("OrderInfo of a pending order has %s: %s", absent, got)
		}
	}
	if status, got := do(t, http.MethodPost, f.url, `{"AccessName":"alice","AccessKey":"`+f.aliceKey+`","action":"RenewCheck","orderId":1020}`); status != 200 || got != `{"orderId":1020,"renewed_orderId":1021}` {
		t.Errorf("RenewCheck 1020: %d %s", status, got)
	}
}
