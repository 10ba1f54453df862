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

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/webhook"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
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
func deliverNow(t *testing.T, store storekit.Store, disableAfter time.Duration) {
	t.Helper()
	w := webhook.NewWorker(webhook.WorkerConfig{Store: store, DisableAfter: disableAfter,
		Client: webhook.NewHTTPClient(webhook.Options{AllowPrivate: true, Timeout: 5 * time.Second})})
	if err := w.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// memberDeliveries lists the latest deliveries of the member's endpoint.
func memberDeliveries(t *testing.T, store storekit.Store, memberID, endpointID int64, limit int) []webhook.Delivery {
	t.Helper()
	jobs, err := store.Jobs(context.Background(), queue.List{Kind: queue.KindWebhook, MemberID: memberID, SubjectID: endpointID, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]webhook.Delivery, len(jobs))
	for i, j := range jobs {
		if ds[i], err = webhook.DeliveryOf(j); err != nil {
			t.Fatal(err)
		}
	}
	return ds
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
	ds := memberDeliveries(t, f.store, aliceID(t, f), id, 20)
	if len(ds) != 1 || ds[0].MsgID != ids[0] {
		t.Fatalf("deliveries: %+v", ds)
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
	poll.Until(t, 10*time.Second, "the endpoint failing for longer than a millisecond", func() bool {
		ep, err := f.store.FindEndpoint(ctx, id)
		return err == nil && !ep.FailingSince.IsZero() && time.Since(ep.FailingSince) > time.Millisecond
	})
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
