package server_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/server/web"
	"github.com/certorder/certorder/stores"
)

func newTLSServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv
}

var newKeyText = regexp.MustCompile(`<code class="secret" id="new-key"[^>]*>(cok_[^<]+)</code>`)

// createKey creates a key through the keys page and returns the page and the key's text.
func (b *browser) createKey(label string) (page, string) {
	b.t.Helper()
	keys := b.get("/keys")
	p := b.post("/keys", url.Values{"csrf": {keys.csrf(b.t)}, "label": {label}})
	m := newKeyText.FindStringSubmatch(p.body)
	if m == nil {
		return p, ""
	}
	return p, m[1]
}

func keyIDOf(t *testing.T, text string) string {
	t.Helper()
	id, ok := certorder.KeyID(text)
	if !ok {
		t.Fatalf("not a key: %q", text)
	}
	return id
}

// A member rotates a key on the web page: creates one (shown once), uses
// it, revokes the old one; every change is in the audit trail with the
// member and the IP.
func TestWebKeys(t *testing.T) {
	t.Parallel()
	clk := &clock{t: today}
	f, base := webFixture(t, server.Config{Now: clk.Now, AuditRetention: time.Hour})
	ctx := context.Background()
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	aliceID, bobID := keyIDOf(t, f.aliceKey), keyIDOf(t, f.bobKey)

	keys := b.get("/keys")
	for _, want := range []string{`<h1>Your API keys</h1>`, "<code>" + aliceID + "</code>", `<span class="badge">this session</span>`,
		`<span class="revoked">Revoked `, `2 keys, 1 active`, `<a href="/keys/` + aliceID + `/revoke">`, `name="label"`, `aria-current="page">API keys<`} {
		if !strings.Contains(keys.body, want) {
			t.Errorf("keys page lacks %s", want)
		}
	}
	if strings.Contains(keys.body, bobID) {
		t.Fatal("alice's keys page shows bob's key")
	}

	// Create: the key is shown once, and works at once.
	created, text := b.createKey("cron on web1")
	if created.status != 200 || text == "" || !strings.Contains(created.body, "shown only this once") {
		t.Fatalf("create: %d\n%s", created.status, created.body)
	}
	if created.header.Get("Cache-Control") != "no-store" {
		t.Errorf("the page with the key may be cached: %q", created.header.Get("Cache-Control"))
	}
	newID := keyIDOf(t, text)
	if status, got := f.post(t, body("AccessName", `"alice"`, "AccessKey", `"`+text+`"`, "action", `"Auth"`)); status != 200 {
		t.Fatalf("the new key: %d %s", status, got)
	}
	keys = b.get("/keys")
	if strings.Contains(keys.body, text) || !strings.Contains(keys.body, "cron on web1") || !strings.Contains(keys.body, "3 keys, 2 active") {
		t.Fatalf("keys page after create:\n%s", keys.body)
	}
	// "Last used" comes from the audit trail, written in the background.
	if !poll.Within(10*time.Second, func() bool {
		keys = b.get("/keys")
		return strings.Contains(html.UnescapeString(keys.body), "<td data-label=\"Last used by the API\">15 Jan 2026, 13:00 (UTC+00:00)</td>")
	}) {
		t.Fatalf("no last use after an API call:\n%s", keys.body)
	}

	// Labels are checked.
	for _, label := range []string{"", "   ", strings.Repeat("x", 65), "bad\x07bell"} {
		p, text := b.createKey(label)
		if p.status != http.StatusBadRequest || text != "" || !strings.Contains(p.body, `role="alert">Give the key a label`) {
			t.Errorf("label %q: %d", label, p.status)
		}
	}

	// Revoke: a confirmation first, then the POST with the session's token.
	confirm := b.get("/keys/" + newID + "/revoke")
	if confirm.status != 200 || !strings.Contains(confirm.body, `action="/keys/`+newID+`/revoke"`) || !strings.Contains(confirm.body, "cannot be undone") {
		t.Fatalf("confirmation: %d\n%s", confirm.status, confirm.body)
	}
	if p := b.post("/keys/"+newID+"/revoke", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("revoke without the token: %d", p.status)
	}
	if p := b.post("/keys/"+newID+"/revoke", url.Values{"csrf": {"forged"}}); p.status != http.StatusForbidden {
		t.Errorf("revoke with a forged token: %d", p.status)
	}
	if p := b.post("/keys", url.Values{"label": {"x"}}); p.status != http.StatusForbidden {
		t.Errorf("create without the token: %d", p.status)
	}
	p := b.post("/keys/"+newID+"/revoke", url.Values{"csrf": {confirm.csrf(t)}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/keys?revoked="+newID {
		t.Fatalf("revoke: %d %s", p.status, p.header.Get("Location"))
	}
	if status, _ := f.post(t, body("AccessName", `"alice"`, "AccessKey", `"`+text+`"`, "action", `"Auth"`)); status != 401 {
		t.Errorf("the revoked key: %d", status)
	}
	if p := b.get("/keys?revoked=" + newID); !strings.Contains(p.body, "Key "+newID+" is revoked.") {
		t.Errorf("no notice after revoking")
	}

	// Another member's key, or no key: "not found", and nothing changes.
	for _, id := range []string{bobID, "000000000000", "nonsense"} {
		if p := b.get("/keys/" + id + "/revoke"); p.status != http.StatusNotFound {
			t.Errorf("confirmation for key %s: %d", id, p.status)
		}
		if p := b.post("/keys/"+id+"/revoke", url.Values{"csrf": {confirm.csrf(t)}}); p.status != http.StatusNotFound {
			t.Errorf("revoking key %s: %d", id, p.status)
		}
	}
	if status, _ := f.post(t, body("AccessName", `"bob"`, "AccessKey", q(f.bobKey), "action", `"Auth"`)); status != 200 {
		t.Fatalf("bob's key after alice tried to revoke it: %d", status)
	}

	// Every change is in the audit trail, with the member and the address.
	f.handler.Close()
	entries, err := f.store.Audit(ctx, certorder.AuditQuery{Member: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var web []string
	for _, e := range entries {
		if strings.HasPrefix(e.Action, "web ") {
			web = append(web, fmt.Sprintf("%s %s %s", e.Action, e.Member, e.ClientIP))
		}
	}
	want := []string{"web KeyRevoke " + newID + " alice 127.0.0.1", "web KeyCreate " + newID + " alice 127.0.0.1", "web SignIn " + aliceID + " alice 127.0.0.1"}
	if strings.Join(web, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit trail:\n%s\nwant\n%s", strings.Join(web, "\n"), strings.Join(want, "\n"))
	}
}

// Revoking the key the session signed in with ends the session.
func TestWebRevokeOwnKey(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	id := keyIDOf(t, f.aliceKey)
	confirm := b.get("/keys/" + id + "/revoke")
	if !strings.Contains(confirm.body, "revoking it ends this session") {
		t.Errorf("no warning that the session ends:\n%s", confirm.body)
	}
	p := b.post("/keys/"+id+"/revoke", url.Values{"csrf": {confirm.csrf(t)}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/signin?revoked=1" ||
		!strings.Contains(strings.Join(p.header.Values("Set-Cookie"), "\n"), "certorder_session=; Path=/; Max-Age=0") {
		t.Fatalf("revoking the session's key: %d %s %v", p.status, p.header.Get("Location"), p.header.Values("Set-Cookie"))
	}
	if p := b.get("/orders"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/signin" {
		t.Fatalf("after revoking the session's key: %d %s", p.status, p.header.Get("Location"))
	}
	if p := b.get("/signin?revoked=1"); !strings.Contains(p.body, "You revoked the AccessKey you signed in with") {
		t.Error("no note on the sign-in page")
	}
	if status, _ := f.post(t, f.alice("Auth")); status != 401 {
		t.Errorf("the revoked key still works: %d", status)
	}
}

// The operator turns self-service keys off, for everyone or for one member:
// the keys are listed, and no change is accepted.
func TestWebKeysOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		global bool
	}{{"globally", true}, {"for the member", false}} {
		t.Run(tc.name, func(t *testing.T) {
			f, base := webFixture(t, server.Config{SelfServiceKeysOff: tc.global})
			if !tc.global {
				if err := f.store.SetSelfServiceKeys(context.Background(), "alice", false); err != nil {
					t.Fatal(err)
				}
			}
			b := newBrowser(t, base, nil)
			b.signIn("alice", f.aliceKey)
			id := keyIDOf(t, f.aliceKey)
			keys := b.get("/keys")
			if keys.status != 200 || !strings.Contains(keys.body, "<code>"+id+"</code>") || !strings.Contains(keys.body, "turned off for your account") ||
				strings.Contains(keys.body, `action="/keys"`) || strings.Contains(keys.body, "/revoke") {
				t.Fatalf("keys page with self-service off: %d\n%s", keys.status, keys.body)
			}
			if p := b.post("/keys", url.Values{"csrf": {keys.csrf(t)}, "label": {"x"}}); p.status != http.StatusForbidden {
				t.Errorf("create: %d", p.status)
			}
			if p := b.post("/keys/"+id+"/revoke", url.Values{"csrf": {keys.csrf(t)}}); p.status != http.StatusForbidden {
				t.Errorf("revoke: %d", p.status)
			}
			if status, _ := f.post(t, f.alice("Auth")); status != 200 {
				t.Errorf("alice's key after the refused revocation: %d", status)
			}
			list, err := f.store.Keys(context.Background(), "alice")
			if err != nil || len(list) != 2 {
				t.Errorf("alice's keys: %d, %v", len(list), err)
			}
		})
	}
}

// A member holds at most MaxActiveKeys active keys.
func TestWebKeysLimit(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	for i := 1; i < 20; i++ { // alice has one active key already
		if p, text := b.createKey(fmt.Sprintf("key %d", i)); text == "" {
			t.Fatalf("key %d: %d", i, p.status)
		}
	}
	p, text := b.createKey("one too many")
	if p.status != http.StatusConflict || text != "" || !strings.Contains(html.UnescapeString(p.body), "You have 20 active keys") {
		t.Fatalf("the 21st key: %d", p.status)
	}
}

// Under TLS the cookies carry the __Host- prefix, so that a sibling domain
// or a plain-HTTP attacker cannot plant them; a planted cookie without the
// prefix is not read.
func TestWebHostCookies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.SQLite(t), server.Config{})
	h, err := server.New(f.store, server.Config{CASegment: "digicert", Web: true, Now: func() time.Time { return today }})
	if err != nil {
		t.Fatal(err)
	}
	srv := newTLSServer(t, h)
	b := newBrowser(t, srv.URL, srv.Client().Transport)
	form := b.get("/signin")
	set := strings.Join(form.header.Values("Set-Cookie"), "\n")
	if !regexp.MustCompile(`^__Host-certorder_csrf=[^;]+; Path=/; Max-Age=3600; HttpOnly; Secure; SameSite=Strict$`).MatchString(set) {
		t.Fatalf("CSRF cookie under TLS: %s", set)
	}
	p := b.post("/signin", url.Values{"csrf": {form.csrf(t)}, "name": {"alice"}, "key": {f.aliceKey}})
	set = strings.Join(p.header.Values("Set-Cookie"), "\n")
	if p.status != http.StatusSeeOther || !regexp.MustCompile(`__Host-certorder_session=[^;]+; Path=/; Max-Age=43200; HttpOnly; Secure; SameSite=Strict`).MatchString(set) ||
		strings.Contains(set, "Domain=") {
		t.Fatalf("session cookie under TLS: %d %s", p.status, set)
	}
	if p := b.get("/orders"); p.status != 200 {
		t.Fatalf("orders over TLS: %d", p.status)
	}

	// A token planted in a cookie without the prefix does not count.
	planted := newBrowser(t, srv.URL, srv.Client().Transport)
	u, _ := url.Parse(srv.URL)
	planted.hc.Jar.SetCookies(u, []*http.Cookie{{Name: "certorder_csrf", Value: "planted", Path: "/"}})
	if p := planted.post("/signin", url.Values{"csrf": {"planted"}, "name": {"alice"}, "key": {f.aliceKey}}); p.status != http.StatusForbidden {
		t.Fatalf("sign-in with a planted token: %d", p.status)
	}
}

// A browser's cross-origin POST is refused before any form is read, even
// with a valid token: login CSRF and key changes from another site.
func TestWebCrossOrigin(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	b := newBrowser(t, base, headerTransport{"Sec-Fetch-Site": "cross-site"})
	form := b.get("/signin") // a GET is safe: allowed
	if form.status != 200 {
		t.Fatalf("GET cross-site: %d", form.status)
	}
	if p := b.post("/signin", url.Values{"csrf": {form.csrf(t)}, "name": {"alice"}, "key": {f.aliceKey}}); p.status != http.StatusForbidden ||
		!strings.Contains(p.body, "sent from another site") {
		t.Fatalf("cross-site sign-in: %d", p.status)
	}
	same := newBrowser(t, base, headerTransport{"Sec-Fetch-Site": "same-origin"})
	if p := same.signIn("alice", f.aliceKey); p.status != http.StatusSeeOther {
		t.Fatalf("same-origin sign-in: %d", p.status)
	}
	keys := same.get("/keys")
	evil := newBrowser(t, base, headerTransport{"Origin": "https://evil.example"})
	u, _ := url.Parse(base)
	evil.hc.Jar.SetCookies(u, same.hc.Jar.Cookies(u))
	if p := evil.post("/keys", url.Values{"csrf": {keys.csrf(t)}, "label": {"x"}}); p.status != http.StatusForbidden {
		t.Fatalf("cross-origin key creation: %d", p.status)
	}
}

// A key revoked on the web page is refused at once by every instance, each
// with its cache on (PostgreSQL): the page returns only once every live
// instance has applied the revocation.
func TestWebRevokeAcrossCachingInstances(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	f := newFixture(t, dsn, server.Config{Web: true})
	other, err := stores.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	var caches [2]*credcache.Store
	var servers [2]*httptest.Server
	for i, s := range []storekit.Store{f.store, other} {
		src, err := s.(credcache.Sourcer).CacheSource(ctx, credcache.SourceConfig{Instance: fmt.Sprint("instance ", i)})
		if err != nil {
			t.Fatal(err)
		}
		caches[i] = credcache.NewStore(s, src, 1<<20, time.Second)
		h, err := server.New(s, server.Config{CASegment: "digicert", Web: true, Credentials: caches[i], Now: func() time.Time { return today }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		servers[i] = httptest.NewServer(h)
		t.Cleanup(servers[i].Close)
	}
	srv2 := servers[1]
	b := newBrowser(t, servers[0].URL, nil)
	b.signIn("alice", f.aliceKey)
	for range 3 {
		_, text := b.createKey("rotated")
		if text == "" {
			t.Fatal("no key created")
		}
		auth := body("AccessName", `"alice"`, "AccessKey", q(text), "action", `"Auth"`)
		poll.Until(t, 10*time.Second, "the other instance has the new key in its cache", func() bool {
			if status, _ := do(t, http.MethodPost, srv2.URL+"/api/digicert/", auth); status != 200 {
				return false
			}
			_, before, _ := caches[1].Stats()
			do(t, http.MethodPost, srv2.URL+"/api/digicert/", auth)
			_, after, _ := caches[1].Stats()
			return after > before
		})
		id := keyIDOf(t, text)
		confirm := b.get("/keys/" + id + "/revoke")
		if p := b.post("/keys/"+id+"/revoke", url.Values{"csrf": {confirm.csrf(t)}}); p.status != http.StatusSeeOther {
			t.Fatalf("revoke: %d", p.status)
		}
		if status, got := do(t, http.MethodPost, srv2.URL+"/api/digicert/", auth); status != 401 {
			t.Fatalf("the other instance, right after the revocation returned: %d %s", status, got)
		}
	}
}

// Parallel requests cannot pass the per-member caps: 60 key creations and
// 40 endpoint additions at once leave exactly MaxActiveKeys active keys
// and MaxEndpoints endpoints, on both stores (before, the count and the
// insert were two steps: 161 keys against a cap of 20 on PostgreSQL).
func TestWebCapsUnderParallelRequests(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn, server.Config{Web: true, PrivateWebhooks: true})
		base := strings.TrimSuffix(f.url, "/api/digicert/")
		b := newBrowser(t, base, nil)
		b.signIn("alice", f.aliceKey)
		csrf := b.get("/keys").csrf(t)
		statuses := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		post := func(path string, form url.Values) {
			defer wg.Done()
			p := b.post(path, form)
			mu.Lock()
			statuses[p.status]++
			mu.Unlock()
		}
		for i := range 60 {
			wg.Add(1)
			go post("/keys", url.Values{"csrf": {csrf}, "label": {fmt.Sprintf("k%d", i)}})
		}
		for i := range 40 {
			wg.Add(1)
			go post("/webhooks", url.Values{"csrf": {csrf}, "url": {fmt.Sprintf("http://127.0.0.1:9/hook%d", i)}})
		}
		wg.Wait()
		ctx := context.Background()
		keys, err := f.store.Keys(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		active := 0
		for _, k := range keys {
			if k.RevokedAt.IsZero() {
				active++
			}
		}
		eps, err := f.store.Endpoints(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("answers %v; %d active keys, %d endpoints", statuses, active, len(eps))
		if active != web.MaxActiveKeys || len(eps) != web.MaxEndpoints {
			t.Errorf("%d active keys (cap %d), %d endpoints (cap %d)", active, web.MaxActiveKeys, len(eps), web.MaxEndpoints)
		}
	})
}
