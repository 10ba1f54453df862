package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/storetest"
	"github.com/certorder/certorder/webhook"
)

// A member adds an address on the page: refused when it is not one, twice,
// or a sixth; added unconfirmed with its confirmation queued; changed;
// removed. Another member's address is "not found". Without SMTP set up
// the page lists addresses and offers no form.
func TestWebNotices(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{Notices: true, AuditRetention: time.Hour})
	ctx := context.Background()
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	alice := aliceID(t, f)

	list := b.get("/notices")
	mustContain(t, "the empty notices page", list, "<h1>E-mail notices</h1>", `aria-current="page">E-mail notices<`,
		"You have no notice addresses yet.", `action="/notices"`, `name="lang" value="ja"`, `value="order.plan_ending"`)
	csrf := list.csrf(t)
	add := func(address string, events ...string) page {
		return b.post("/notices", url.Values{"csrf": {csrf}, "address": {address}, "lang": {"ja"}, "events": events})
	}
	if p := add("not an address"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "This is not an e-mail address") ||
		!strings.Contains(p.body, `value="not an address"`) {
		t.Fatalf("a bad address: %d\n%s", p.status, p.body)
	}
	p := add("Ops@Acme.Example", "order.renewed", "order.plan_ending")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/notices?added=") {
		t.Fatalf("add: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	mustContain(t, "the page after adding", b.get(p.header.Get("Location")), "A confirmation link was sent to ops@acme.example",
		"Awaiting confirmation", "日本語", "order.renewed, order.plan_ending")
	as, err := f.store.NoticeAddresses(ctx, alice)
	if err != nil || len(as) != 1 || as[0].Active() || as[0].Lang != "ja" {
		t.Fatalf("stored: %+v %v", as, err)
	}
	ns, err := f.store.ClaimJobs(ctx, queue.Claim{Kinds: queue.NoticeKinds, Owner: "test", At: time.Now().Add(time.Second),
		Lease: time.Minute, Limit: 10})
	if err != nil || len(ns) != 1 || ns[0].Kind != queue.KindNoticeConfirm || ns[0].SubjectID != as[0].ID {
		t.Fatalf("the confirmation is not queued: %+v %v", ns, err)
	}
	if p := add("ops@acme.example"); p.status != http.StatusConflict || !strings.Contains(p.body, "You have this address already") {
		t.Fatalf("twice: %d", p.status)
	}
	for i := 2; i <= certorder.MaxNoticeAddresses; i++ {
		if p := add(fmt.Sprintf("ops%d@acme.example", i)); p.status != http.StatusSeeOther {
			t.Fatalf("address %d: %d", i, p.status)
		}
	}
	if p := add("one-too-many@acme.example"); p.status != http.StatusConflict || !strings.Contains(p.body, "You have 5 addresses") {
		t.Fatalf("a sixth: %d", p.status)
	}
	mustContain(t, "the page at the limit", b.get("/notices"), "5 addresses<", "You have 5 addresses, the most you may have")

	// Another member's address is not found, for every call.
	bob, err := f.store.FindMember(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := f.store.AddNoticeAddress(ctx, bob.ID, certorder.NoticeAddress{Address: "bob@b.example", Lang: "en", Secret: "eA=="}, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []page{b.get(fmt.Sprintf("/notices/%d", theirs.ID)),
		b.post(fmt.Sprintf("/notices/%d", theirs.ID), url.Values{"csrf": {csrf}, "lang": {"en"}}),
		b.post(fmt.Sprintf("/notices/%d/delete", theirs.ID), url.Values{"csrf": {csrf}})} {
		if p.status != http.StatusNotFound {
			t.Errorf("another member's address: %d", p.status)
		}
	}

	// Change, then remove.
	mine := as[0].ID
	edit := b.get(fmt.Sprintf("/notices/%d", mine))
	mustContain(t, "the address's page", edit, "Notice address ops@acme.example", `value="ja" checked`, `value="order.renewed" checked`)
	p = b.post(fmt.Sprintf("/notices/%d", mine), url.Values{"csrf": {csrf}, "lang": {"en"}, "events": {"order.expiring"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("save: %d", p.status)
	}
	mustContain(t, "the saved address", b.get(p.header.Get("Location")), "Saved.", `value="en" checked`, `value="order.expiring" checked`)
	if p := b.post(fmt.Sprintf("/notices/%d", mine), url.Values{"csrf": {csrf}, "lang": {"fr"}}); p.status != http.StatusBadRequest {
		t.Errorf("an unknown language: %d", p.status)
	}
	if p := b.post(fmt.Sprintf("/notices/%d/delete", mine), url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("remove: %d", p.status)
	}
	if _, err := f.store.FindNoticeAddress(ctx, mine); err == nil {
		t.Error("the address is still there")
	}
	if p := b.post("/notices", url.Values{"csrf": {"wrong"}, "address": {"x@acme.example"}}); p.status != http.StatusForbidden {
		t.Errorf("a form without its token: %d", p.status)
	}

	// Without SMTP: no form, and adding is refused.
	off, base2 := webFixture(t, server.Config{})
	b2 := newBrowser(t, base2, nil)
	b2.signIn("alice", off.aliceKey)
	page2 := b2.get("/notices")
	mustContain(t, "the page without SMTP", page2, "Your reseller has not set up e-mail notices")
	if strings.Contains(page2.body, `action="/notices"`) {
		t.Error("the page offers the form without SMTP")
	}
	if p := b2.post("/notices", url.Values{"csrf": {page2.csrf(t)}, "address": {"x@acme.example"}}); p.status != http.StatusConflict {
		t.Errorf("adding without SMTP: %d", p.status)
	}
}

// The links of a message work without signing in: a confirmation's GET
// only shows its button, its POST confirms, once; an expired or forged
// link is refused; the unsubscribe link takes RFC 8058's one-click POST.
func TestWebNoticeLinks(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{Notices: true})
	ctx := context.Background()
	alice := aliceID(t, f)
	a, err := notice.NewAddress("ops@acme.example", "en", nil)
	if err != nil {
		t.Fatal(err)
	}
	a.CreatedAt = today // the fixture's clock
	if a, err = f.store.AddNoticeAddress(ctx, alice, a, 5); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil) // not signed in
	token := notice.ConfirmToken(a)
	shown := b.get("/notices/confirm?t=" + url.QueryEscape(token))
	mustContain(t, "the confirmation page", shown, "Member alice asked for certorder notices about its orders to be sent to ops@acme.example",
		`action="/notices/confirm"`, ">Confirm<")
	if got, _ := f.store.FindNoticeAddress(ctx, a.ID); got.Active() {
		t.Fatal("a GET confirmed the address")
	}
	if p := b.post("/notices/confirm", url.Values{"t": {token}}); p.status != http.StatusOK || !strings.Contains(p.body, "Confirmed: ops@acme.example") {
		t.Fatalf("confirm: %d\n%s", p.status, p.body)
	}
	if got, _ := f.store.FindNoticeAddress(ctx, a.ID); !got.Active() {
		t.Fatal("not confirmed")
	}
	if p := b.post("/notices/confirm", url.Values{"t": {token}}); p.status != http.StatusConflict || !strings.Contains(p.body, "used already") {
		t.Errorf("confirming twice: %d", p.status)
	}
	old, _ := notice.NewAddress("old@acme.example", "en", nil)
	old.CreatedAt = today.Add(-notice.ConfirmFor - time.Minute)
	if old, err = f.store.AddNoticeAddress(ctx, alice, old, 5); err != nil {
		t.Fatal(err)
	}
	if p := b.post("/notices/confirm", url.Values{"t": {notice.ConfirmToken(old)}}); p.status != http.StatusGone || !strings.Contains(p.body, "has expired") {
		t.Errorf("an expired link: %d\n%s", p.status, p.body)
	}
	forged := notice.ConfirmToken(old)
	forged = forged[:len(forged)-2] + "xx"
	for _, tok := range []string{forged, "", "c.999999.1.x", strings.Replace(token, "c.", "u.", 1)} {
		if p := b.post("/notices/confirm", url.Values{"t": {tok}}); p.status != http.StatusNotFound || !strings.Contains(p.body, "not valid") {
			t.Errorf("a forged link %q: %d", tok, p.status)
		}
	}

	// Unsubscribe: the page's GET changes nothing; the mail client's POST,
	// from another origin, without a cookie or a form token, does.
	link := base + "/notices/unsubscribe?t=" + url.QueryEscape(notice.UnsubscribeToken(a))
	mustContain(t, "the unsubscribe page", b.get(strings.TrimPrefix(link, base)), "Stop the certorder notices for member alice to ops@acme.example?")
	if got, _ := f.store.FindNoticeAddress(ctx, a.ID); !got.Active() {
		t.Fatal("a GET unsubscribed")
	}
	resp, err := http.Post(link, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Unsubscribed") {
		t.Fatalf("one-click unsubscribe: %d\n%s", resp.StatusCode, body)
	}
	if got, _ := f.store.FindNoticeAddress(ctx, a.ID); got.Active() || got.UnsubscribedAt.IsZero() {
		t.Fatalf("still subscribed: %+v", got)
	}
	if p := b.post("/notices/unsubscribe?t="+url.QueryEscape(notice.UnsubscribeToken(old)[:20]), nil); p.status != http.StatusNotFound {
		t.Errorf("a cut unsubscribe link: %d", p.status)
	}
}

// A chat-room endpoint: chosen on the page, it gets a test event and an
// order's event as Slack's {"text": ...}, a readable line with the order's link.
func TestWebWebhookChatFormat(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{PrivateWebhooks: true})
	ctx := context.Background()
	var mu sync.Mutex
	var texts []string
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Error(err)
		}
		mu.Lock()
		texts = append(texts, m.Text)
		mu.Unlock()
	}))
	defer rc.Close()
	w := webhook.NewWorker(webhook.WorkerConfig{Store: f.store, Orders: f.store,
		Texts:  notice.Texts{PublicURL: "https://certorder.example"},
		Client: webhook.NewHTTPClient(webhook.Options{AllowPrivate: true, Timeout: 5 * time.Second})})
	if err := w.Tick(ctx); err != nil { // the fixture's renewal, before any endpoint: no one is told
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	list := b.get("/webhooks")
	mustContain(t, "the webhooks page", list, `name="format" value="slack"`, `name="format" value="standard" checked`)
	p := b.post("/webhooks", url.Values{"csrf": {list.csrf(t)}, "url": {rc.URL + "/chat"}, "format": {"slack"}})
	id := endpointLink.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || id == nil {
		t.Fatalf("add: %d", p.status)
	}
	endpoint := b.get("/webhooks/" + id[1])
	mustContain(t, "the endpoint's page", endpoint, "Chat room (Slack)")
	b.post("/webhooks/"+id[1]+"/test", url.Values{"csrf": {endpoint.csrf(t)}})
	if _, err := f.store.ImportOrders(ctx, "alice", storetest.Orders(t, storetest.OrderJSON(1004, 0, "2028-03-01"))); err != nil {
		t.Fatal(err)
	}
	if err := f.store.RecordRenewal(ctx, 1003, 1004); err != nil {
		t.Fatal(err)
	}
	if err := w.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(texts) // "Order ..." before "This ..."
	if len(texts) != 2 || texts[1] != webhook.TestMessage ||
		texts[0] != "Order 1003 (old.example.com) was renewed as order 1004. Follow order 1004 from now on. https://certorder.example/orders/1003" {
		t.Fatalf("the chat room got %q", texts)
	}
}
