package server_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/server/web"
	"github.com/certorder/certorder/webhook"
)

// hookReceiver is a real HTTP receiver on loopback that verifies every
// message with the Standard Webhooks reference library and answers with
// the status (and body) it is told to.
type hookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	status int
	answer string
	ids    []string // webhook-id of each message, in order
	types  []string
	bad    []string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	rc := &hookReceiver{status: http.StatusNoContent}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(rc.secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		if err != nil {
			rc.bad = append(rc.bad, err.Error())
		}
		rc.ids = append(rc.ids, r.Header.Get("webhook-id"))
		typ := regexp.MustCompile(`"type":"([^"]+)"`).FindStringSubmatch(string(body))
		if typ != nil {
			rc.types = append(rc.types, typ[1])
		}
		w.WriteHeader(rc.status)
		io.WriteString(w, rc.answer)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) set(secret string, status int, answer string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if secret != "" {
		rc.secret = secret
	}
	rc.status, rc.answer = status, answer
}

// got returns the webhook-ids and types received, failing on any message
// the reference library refused.
func (rc *hookReceiver) got(t *testing.T) ([]string, []string) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("messages the reference library refuses: %v", rc.bad)
	}
	return append([]string(nil), rc.ids...), append([]string(nil), rc.types...)
}

// deliverNow runs one round of serve's delivery worker, on the real clock
// (the store stamps deliveries with it), allowed to reach loopback.
func deliverNow(t *testing.T, store certorder.Store, disableAfter time.Duration) {
	t.Helper()
	w := webhook.NewWorker(webhook.WorkerConfig{Store: store, DisableAfter: disableAfter,
		Client: webhook.NewHTTPClient(webhook.Options{AllowPrivate: true, Timeout: 5 * time.Second})})
	if err := w.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

var newSecretText = regexp.MustCompile(`<code class="secret" id="new-secret"[^>]*>(whsec_[^<]+)</code>`)
var endpointLink = regexp.MustCompile(`action="/webhooks/(\d+)/test"`)

// addWebhook adds an endpoint through the page: the page, the secret and the endpoint's ID.
func (b *browser) addWebhook(rawURL string, events ...string) (page, string, int64) {
	b.t.Helper()
	list := b.get("/webhooks")
	p := b.post("/webhooks", url.Values{"csrf": {list.csrf(b.t)}, "url": {rawURL}, "events": events})
	m, id := newSecretText.FindStringSubmatch(p.body), endpointLink.FindStringSubmatch(p.body)
	if m == nil || id == nil {
		return p, "", 0
	}
	n, _ := strconv.ParseInt(id[1], 10, 64)
	return p, html.UnescapeString(m[1]), n // html/template writes + as &#43;
}

// anySecret matches a signing secret, as a page writes it.
var anySecret = regexp.MustCompile(`whsec_[A-Za-z0-9+/=&#;]+`)

// redact keeps signing secrets out of the test's output.
func redact(s string) string { return anySecret.ReplaceAllString(s, "whsec_(redacted)") }

func mustContain(t *testing.T, what string, p page, wants ...string) {
	t.Helper()
	body := html.UnescapeString(p.body)
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, redact(body))
		}
	}
}

// A member adds an endpoint (the secret shown once), sends a test event
// that a receiver verifies with the reference library, sees it delivered,
// sends it again, sees failures and why an endpoint was disabled, disables,
// enables and deletes it; every change is in the audit trail.
func TestWebWebhooks(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{PrivateWebhooks: true, AuditRetention: time.Hour})
	ctx := context.Background()
	rc := newHookReceiver(t)
	deliverNow(t, f.store, 0) // the fixture's renewal happened before any endpoint: no one is told
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)

	list := b.get("/webhooks")
	mustContain(t, "the empty webhooks page", list, `<h1>Webhooks</h1>`, `aria-current="page">Webhooks<`,
		"You have no webhook endpoints yet.", `action="/webhooks"`, `value="order.renewed"`, `value="order.expiring"`)

	// Add: the secret is on this page and no other.
	created, secret, id := b.addWebhook(rc.srv.URL+"/hook?token=abc", "order.renewed", "order.expiring")
	if created.status != 200 || secret == "" || id == 0 {
		t.Fatalf("add: %d\n%s", created.status, redact(created.body))
	}
	mustContain(t, "the new endpoint's page", created, "shown only this once", rc.srv.URL+"/hook?token=abc", "order.renewed, order.expiring")
	if created.header.Get("Cache-Control") != "no-store" {
		t.Errorf("the page with the secret may be cached: %q", created.header.Get("Cache-Control"))
	}
	if _, err := webhook.ParseSecret(secret); err != nil {
		t.Fatalf("the secret shown: %v", err)
	}
	ep, err := f.store.MemberEndpoint(ctx, aliceID(t, f), id)
	if err != nil || ep.Secret != secret || ep.URL != rc.srv.URL+"/hook?token=abc" || strings.Join(ep.EventTypes, ",") != "order.renewed,order.expiring" {
		t.Fatalf("stored: %s %v", redact(fmt.Sprintf("%+v", ep)), err)
	}
	rc.set(secret, http.StatusNoContent, "")
	list = b.get("/webhooks")
	endpoint := b.get(fmt.Sprintf("/webhooks/%d", id))
	for _, p := range []page{list, endpoint} {
		if strings.Contains(p.body, "whsec_") || strings.Contains(p.body, strings.TrimPrefix(secret, "whsec_")) {
			t.Fatalf("the secret is shown again:\n%s", redact(p.body))
		}
	}
	mustContain(t, "the webhooks page", list, fmt.Sprintf(`<a href="/webhooks/%d">Endpoint %d</a>`, id, id), "1 endpoint<",
		rc.srv.URL+"/hook?token=abc", "order.renewed, order.expiring", `class="state-ok">Enabled<`, "none yet")
	mustContain(t, "the endpoint's page", endpoint, fmt.Sprintf("<h1>Webhook endpoint %d</h1>", id),
		"Nothing has been sent to this endpoint yet.", "Send a test event", ">Disable<", fmt.Sprintf(`href="/webhooks/%d/delete"`, id))

	// A test event: queued, then delivered and verified by the receiver.
	p := b.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {endpoint.csrf(t)}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != fmt.Sprintf("/webhooks/%d?tested=1", id) {
		t.Fatalf("test event: %d %s", p.status, p.header.Get("Location"))
	}
	queued := b.get(p.header.Get("Location"))
	mustContain(t, "the page after a test event", queued, "A test event is queued", "<code>webhook.test</code>",
		`class="delivery-pending">Queued<`, "1 delivery<")
	if strings.Contains(queued.body, "/redeliver") {
		t.Error("a queued delivery can be sent again")
	}
	deliverNow(t, f.store, 0)
	ids, types := rc.got(t)
	if len(ids) != 1 || types[0] != "webhook.test" {
		t.Fatalf("the receiver got %v %v", ids, types)
	}
	done := b.get(fmt.Sprintf("/webhooks/%d", id))
	mustContain(t, "the delivered test event", done, `class="delivery-delivered">Delivered<`, `data-label="HTTP status" class="num">204<`,
		`data-label="Attempts" class="num">1<`, " ms<", "Send again")
	ds, err := f.store.MemberDeliveries(ctx, aliceID(t, f), id, 20)
	if err != nil || len(ds) != 1 || ds[0].MsgID != ids[0] {
		t.Fatalf("deliveries: %+v %v", ds, err)
	}
	if strings.Contains(html.UnescapeString(done.body), "none yet") {
		t.Error("the endpoint shows no successful delivery after one")
	}

	// Send it again: the same webhook-id; this time the receiver fails it,
	// and the page shows the status, its answer and the endpoint failing.
	rc.set("", http.StatusInternalServerError, "receiver says no")
	redo := fmt.Sprintf("/webhooks/%d/deliveries/%d/redeliver", id, ds[0].ID)
	p = b.post(redo, url.Values{"csrf": {done.csrf(t)}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != fmt.Sprintf("/webhooks/%d?redelivered=%d", id, ds[0].ID) {
		t.Fatalf("redeliver: %d %s", p.status, p.header.Get("Location"))
	}
	mustContain(t, "the page after redelivering", b.get(p.header.Get("Location")),
		fmt.Sprintf("Delivery %d is queued again", ds[0].ID), `class="delivery-pending">Queued<`)
	if p := b.post(redo, url.Values{"csrf": {done.csrf(t)}}); p.status != http.StatusConflict || !strings.Contains(p.body, "is queued already") {
		t.Errorf("redelivering a queued delivery: %d", p.status)
	}
	deliverNow(t, f.store, 0)
	if ids, _ := rc.got(t); len(ids) != 2 || ids[1] != ids[0] {
		t.Fatalf("redelivered with webhook-ids %v", ids)
	}
	failing := b.get(fmt.Sprintf("/webhooks/%d", id))
	mustContain(t, "the failed redelivery", failing, `class="delivery-pending">Retrying: next attempt `, `data-label="HTTP status" class="num">500<`,
		"receiver says no", `class="state-failing">Enabled, failing since `)

	// Disable: by the member, said so; nothing can be sent; enable again.
	p = b.post(fmt.Sprintf("/webhooks/%d/disable", id), url.Values{"csrf": {failing.csrf(t)}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != fmt.Sprintf("/webhooks/%d?disabled=1", id) {
		t.Fatalf("disable: %d %s", p.status, p.header.Get("Location"))
	}
	disabled := b.get(p.header.Get("Location"))
	mustContain(t, "the disabled endpoint", disabled, "The endpoint is disabled", `class="state-disabled">Disabled by you<`, ">Enable<")
	if strings.Contains(disabled.body, "/test\"") || strings.Contains(disabled.body, "/redeliver") {
		t.Error("a disabled endpoint offers a test event or a redelivery")
	}
	if p := b.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {disabled.csrf(t)}}); p.status != http.StatusConflict ||
		!strings.Contains(p.body, "enable it first") {
		t.Errorf("a test event to a disabled endpoint: %d", p.status)
	}
	if ep, _ := f.store.FindEndpoint(ctx, id); ep.Enabled || ep.DisabledReason != "disabled by the member on the web page" {
		t.Errorf("stored after disabling: %s", redact(fmt.Sprintf("%+v", ep)))
	}
	mustContain(t, "the list with a disabled endpoint", b.get("/webhooks"), `class="state-disabled">Disabled by you<`)
	p = b.post(fmt.Sprintf("/webhooks/%d/enable", id), url.Values{"csrf": {disabled.csrf(t)}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != fmt.Sprintf("/webhooks/%d?enabled=1", id) {
		t.Fatalf("enable: %d %s", p.status, p.header.Get("Location"))
	}
	mustContain(t, "the enabled endpoint", b.get(p.header.Get("Location")), "The endpoint is enabled.", `class="state-ok">Enabled<`)

	// The worker's reasons, in words: 410 Gone, and failing for days (here a millisecond).
	rc.set("", http.StatusGone, "")
	b.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {disabled.csrf(t)}})
	deliverNow(t, f.store, 0)
	mustContain(t, "the endpoint after 410", b.get(fmt.Sprintf("/webhooks/%d", id)), `class="state-disabled">Disabled: it answered 410 Gone<`)
	b.post(fmt.Sprintf("/webhooks/%d/enable", id), url.Values{"csrf": {disabled.csrf(t)}})
	rc.set("", http.StatusServiceUnavailable, "")
	b.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {disabled.csrf(t)}})
	deliverNow(t, f.store, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	b.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {disabled.csrf(t)}})
	deliverNow(t, f.store, time.Millisecond)
	gaveUp := b.get(fmt.Sprintf("/webhooks/%d", id))
	mustContain(t, "the endpoint failing for days", gaveUp, `class="state-disabled">Disabled: no delivery succeeded since `)
	if n := strings.Count(gaveUp.body, "<tr>") - 1; n != 4 { // the header row, then one test event delivered and sent again, 410, 503 twice
		t.Errorf("%d deliveries listed, want 4", n)
	}

	// Delete: a confirmation first, then the POST with the session's token.
	confirm := b.get(fmt.Sprintf("/webhooks/%d/delete", id))
	mustContain(t, "the delete confirmation", confirm, fmt.Sprintf("<h1>Delete webhook endpoint %d</h1>", id),
		fmt.Sprintf(`action="/webhooks/%d/delete"`, id), "This cannot be undone", rc.srv.URL+"/hook?token=abc")
	if p := b.post(fmt.Sprintf("/webhooks/%d/delete", id), url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("delete without the token: %d", p.status)
	}
	p = b.post(fmt.Sprintf("/webhooks/%d/delete", id), url.Values{"csrf": {confirm.csrf(t)}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != fmt.Sprintf("/webhooks?deleted=%d", id) {
		t.Fatalf("delete: %d %s", p.status, p.header.Get("Location"))
	}
	mustContain(t, "the list after deleting", b.get(p.header.Get("Location")), fmt.Sprintf("Endpoint %d is deleted.", id),
		"You have no webhook endpoints yet.")
	if _, err := f.store.FindEndpoint(ctx, id); err == nil {
		t.Error("the endpoint is still stored")
	}
	if b.get(fmt.Sprintf("/webhooks/%d", id)).status != http.StatusNotFound {
		t.Error("a deleted endpoint's page is found")
	}

	// Every change is in the audit trail, with the member and the address.
	f.handler.Close()
	entries, err := f.store.Audit(ctx, certorder.AuditQuery{Member: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if strings.HasPrefix(e.Action, "web Webhook") {
			got = append(got, fmt.Sprintf("%s %s %s", e.Action, e.Member, e.ClientIP))
		}
	}
	n := strconv.FormatInt(id, 10)
	var want []string
	for _, a := range []string{"Add " + n, "Test " + n, "Redeliver " + n + "/" + strconv.FormatInt(ds[0].ID, 10), "Disable " + n, "Enable " + n,
		"Test " + n, "Enable " + n, "Test " + n, "Test " + n, "Delete " + n} {
		want = append([]string{"web Webhook" + a + " alice 127.0.0.1"}, want...) // newest first
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit trail:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func aliceID(t *testing.T, f *fixture) int64 {
	t.Helper()
	m, err := f.store.FindMember(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// A URL the service would not deliver to is refused with a message that
// says why, and nothing is stored; so is a type not on the list, and an
// endpoint over the limit.
func TestWebWebhookRefused(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	for _, tc := range []struct {
		url    string
		events []string
		want   string
	}{
		{"http://hooks.example.com/x", nil, "The URL must start with https://"},
		{"http://127.0.0.1:8080/x", nil, "The URL must start with https://"},
		{"https://127.0.0.1:8443/x", nil, "“127.0.0.1” is not a public internet address"},
		{"https://[::1]/x", nil, "“::1” is not a public internet address"},
		{"https://localhost/x", nil, "“localhost” is not a public internet address"},
		{"https://10.1.2.3/x", nil, "“10.1.2.3” is not a public internet address"},
		{"https://169.254.169.254/latest/meta-data", nil, "“169.254.169.254” is not a public internet address"},
		{"hooks.example.com/x", nil, "Give the endpoint's full URL"},
		{"https://user:pw@hooks.example.com/x", nil, "Give the endpoint's full URL"},
		{"ftp://hooks.example.com/x", nil, "Give the endpoint's full URL"},
		{"", nil, "Give the endpoint's full URL"},
		{"https://hooks.example.com/x", []string{"order.renewed", "webhook.test"}, "Choose the events from the list."},
	} {
		p, secret, _ := b.addWebhook(tc.url, tc.events...)
		body := html.UnescapeString(p.body)
		if p.status != http.StatusBadRequest || secret != "" || !strings.Contains(body, `role="alert" id="url-error">`+tc.want) ||
			!strings.Contains(body, `aria-invalid="true"`) || !strings.Contains(body, `value="`+tc.url+`"`) {
			t.Errorf("%q %v: %d, want 400 and %q:\n%s", tc.url, tc.events, p.status, tc.want, body)
		}
		for _, e := range tc.events {
			if e == "order.renewed" && !strings.Contains(body, `value="order.renewed" checked`) {
				t.Errorf("%q: the ticked events are not kept", tc.url)
			}
		}
	}
	// In Japanese too.
	ja := newBrowser(t, base, headerTransport{"Accept-Language": "ja"})
	ja.signIn("alice", f.aliceKey)
	if p, _, _ := ja.addWebhook("http://hooks.example.com/x"); p.status != http.StatusBadRequest ||
		!strings.Contains(p.body, "URL は https:// で始めてください") {
		t.Errorf("refused URL in Japanese: %d\n%s", p.status, p.body)
	}
	if eps, err := f.store.Endpoints(context.Background(), "alice"); err != nil || len(eps) != 0 {
		t.Fatalf("refused endpoints stored: %s %v", redact(fmt.Sprintf("%+v", eps)), err)
	}

	// A public https URL is accepted; up to MaxEndpoints of them.
	for i := range web.MaxEndpoints {
		if p, secret, _ := b.addWebhook(fmt.Sprintf("https://hooks.example.com/%d", i)); secret == "" {
			t.Fatalf("endpoint %d: %d\n%s", i, p.status, p.body)
		}
	}
	p, secret, _ := b.addWebhook("https://hooks.example.com/one-too-many")
	if p.status != http.StatusConflict || secret != "" || !strings.Contains(p.body, fmt.Sprintf("You have %d endpoints, the most allowed", web.MaxEndpoints)) {
		t.Fatalf("endpoint over the limit: %d", p.status)
	}
	if list := b.get("/webhooks"); strings.Contains(list.body, `action="/webhooks"`) {
		t.Error("the add form is offered at the limit")
	}
}

// Another member's endpoint or delivery is "not found", byte for byte like
// a missing one, for every page and action; nothing of it changes.
func TestWebWebhookIsolation(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{PrivateWebhooks: true})
	ctx := context.Background()
	bobs, err := f.store.AddEndpoint(ctx, "bob", certorder.Endpoint{URL: "https://bob.example/hook", Secret: "whsec_" + strings.Repeat("Ym9i", 8)})
	if err != nil {
		t.Fatal(err)
	}
	bobsDelivery, err := f.store.QueueMemberDelivery(ctx, bobs.MemberID, bobs.ID, "webhook.test", "msg_bob", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.FinishAttempt(ctx, certorder.Attempt{DeliveryID: bobsDelivery, EndpointID: bobs.ID, At: time.Now(),
		Status: 500, Class: "http_status", State: certorder.DeliveryFailed}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil)
	if p := b.get("/webhooks"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/signin" {
		t.Errorf("signed out: %d %s", p.status, p.header.Get("Location"))
	}
	b.signIn("alice", f.aliceKey)
	_, _, mine := b.addWebhook("http://127.0.0.1:1/alice")
	if mine == 0 {
		t.Fatal("alice could not add an endpoint")
	}
	list := b.get("/webhooks")
	if strings.Contains(list.body, "bob.example") {
		t.Fatal("alice's list shows bob's endpoint")
	}
	form := url.Values{"csrf": {list.csrf(t)}}
	missing := bobs.ID + 1000
	for _, tc := range []struct {
		method, path string
	}{
		{"GET", "/webhooks/%d"},
		{"GET", "/webhooks/%d/delete"},
		{"POST", "/webhooks/%d/test"},
		{"POST", "/webhooks/%d/disable"},
		{"POST", "/webhooks/%d/enable"},
		{"POST", "/webhooks/%d/delete"},
		{"POST", "/webhooks/%d/deliveries/" + strconv.FormatInt(bobsDelivery, 10) + "/redeliver"},
	} {
		do := func(id int64) page {
			path := fmt.Sprintf(tc.path, id)
			if tc.method == "GET" {
				return b.get(path)
			}
			return b.post(path, form)
		}
		// The same page but for the ID in the language switch's way back.
		theirs, none := do(bobs.ID), do(missing)
		same := strings.ReplaceAll(theirs.body, fmt.Sprintf("%%2F%d", bobs.ID), fmt.Sprintf("%%2F%d", missing)) == none.body
		if theirs.status != http.StatusNotFound || none.status != http.StatusNotFound || !same {
			t.Errorf("%s %s: bob's %d, missing %d; the same page: %v", tc.method, tc.path, theirs.status, none.status, same)
		}
	}
	// Bob's delivery through alice's own endpoint, and malformed IDs.
	if p := b.post(fmt.Sprintf("/webhooks/%d/deliveries/%d/redeliver", mine, bobsDelivery), form); p.status != http.StatusNotFound {
		t.Errorf("bob's delivery through alice's endpoint: %d", p.status)
	}
	for _, id := range []string{"0", "-1", "abc", "99999999999999999999"} {
		if p := b.get("/webhooks/" + id); p.status != http.StatusNotFound {
			t.Errorf("endpoint %q: %d", id, p.status)
		}
		if p := b.post("/webhooks/"+id+"/disable", form); p.status != http.StatusNotFound {
			t.Errorf("disabling endpoint %q: %d", id, p.status)
		}
		if p := b.post(fmt.Sprintf("/webhooks/%d/deliveries/%s/redeliver", mine, id), form); p.status != http.StatusNotFound {
			t.Errorf("redelivering %q: %d", id, p.status)
		}
	}
	ep, err := f.store.FindEndpoint(ctx, bobs.ID)
	if err != nil || !ep.Enabled {
		t.Fatalf("bob's endpoint after alice's attempts: %s %v", redact(fmt.Sprintf("%+v", ep)), err)
	}
	ds, err := f.store.MemberDeliveries(ctx, bobs.MemberID, bobs.ID, 10)
	if err != nil || len(ds) != 1 || ds[0].State != certorder.DeliveryFailed || ds[0].Attempts != 1 {
		t.Fatalf("bob's deliveries after alice's attempts: %+v %v", ds, err)
	}
}

// Every form that changes an endpoint needs the session's CSRF token;
// without it nothing changes.
func TestWebWebhookCSRF(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{PrivateWebhooks: true})
	ctx := context.Background()
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	_, _, id := b.addWebhook("http://127.0.0.1:1/alice")
	if id == 0 {
		t.Fatal("no endpoint")
	}
	did, err := f.store.QueueMemberDelivery(ctx, aliceID(t, f), id, "webhook.test", "msg_x", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.FinishAttempt(ctx, certorder.Attempt{DeliveryID: did, EndpointID: id, At: time.Now(), Status: 500,
		Class: "http_status", State: certorder.DeliveryFailed}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/webhooks", "/webhooks/%d/test", "/webhooks/%d/disable", "/webhooks/%d/enable", "/webhooks/%d/delete",
		"/webhooks/%d/deliveries/" + strconv.FormatInt(did, 10) + "/redeliver"} {
		if strings.Contains(path, "%d") {
			path = fmt.Sprintf(path, id)
		}
		for _, form := range []url.Values{{"url": {"http://127.0.0.1:2/x"}}, {"csrf": {"forged"}, "url": {"http://127.0.0.1:2/x"}}} {
			if p := b.post(path, form); p.status != http.StatusForbidden || !strings.Contains(p.body, "The form had expired") {
				t.Errorf("%s with %v: %d", path, form, p.status)
			}
		}
	}
	eps, err := f.store.Endpoints(ctx, "alice")
	if err != nil || len(eps) != 1 || !eps[0].Enabled {
		t.Fatalf("endpoints after forged forms: %s %v", redact(fmt.Sprintf("%+v", eps)), err)
	}
	ds, err := f.store.MemberDeliveries(ctx, aliceID(t, f), id, 10)
	if err != nil || len(ds) != 1 || ds[0].State != certorder.DeliveryFailed {
		t.Fatalf("deliveries after forged forms: %+v %v", ds, err)
	}
}

// Test events are limited per member (webhook.TestBurst, then one every
// webhook.TestEvery): the next is refused with 429, Retry-After and a
// message saying the figure; another member is not affected.
func TestWebWebhookTestEventLimit(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{PrivateWebhooks: true})
	ctx := context.Background()
	alice := newBrowser(t, base, nil)
	alice.signIn("alice", f.aliceKey)
	_, _, id := alice.addWebhook("http://127.0.0.1:9/hook")
	page := alice.get(fmt.Sprintf("/webhooks/%d", id))
	for i := range webhook.TestBurst {
		if p := alice.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {page.csrf(t)}}); p.status != http.StatusSeeOther {
			t.Fatalf("test event %d: %d", i+1, p.status)
		}
	}
	p := alice.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {page.csrf(t)}})
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
		t.Fatalf("test event %d: %d, Retry-After %q", webhook.TestBurst+1, p.status, p.header.Get("Retry-After"))
	}
	mustContain(t, "the refusal", p, "Too many test events: 5 at most, then one a minute. Try again in")
	if ds, err := f.store.MemberDeliveries(ctx, aliceID(t, f), id, 100); err != nil || len(ds) != webhook.TestBurst {
		t.Fatalf("%d deliveries queued, want %d (%v)", len(ds), webhook.TestBurst, err)
	}
	bob := newBrowser(t, base, nil)
	bob.signIn("bob", f.bobKey)
	_, _, bobs := bob.addWebhook("http://127.0.0.1:9/hook")
	page = bob.get(fmt.Sprintf("/webhooks/%d", bobs))
	if p := bob.post(fmt.Sprintf("/webhooks/%d/test", bobs), url.Values{"csrf": {page.csrf(t)}}); p.status != http.StatusSeeOther {
		t.Fatalf("bob's test event after alice's were refused: %d", p.status)
	}
}
