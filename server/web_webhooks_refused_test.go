package server_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/server/web"
	"github.com/certorder/certorder/webhook"
)

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
	bobsDelivery := failedDelivery(t, f, bobs.MemberID, bobs.ID, "msg_bob")
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
	if ds := memberDeliveries(t, f.store, bobs.MemberID, bobs.ID, 10); len(ds) != 1 || ds[0].State != webhook.StateFailed || ds[0].Attempts != 1 {
		t.Fatalf("bob's deliveries after alice's attempts: %+v", ds)
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
	did := failedDelivery(t, f, aliceID(t, f), id, "msg_x")
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
	if ds := memberDeliveries(t, f.store, aliceID(t, f), id, 10); len(ds) != 1 || ds[0].State != webhook.StateFailed {
		t.Fatalf("deliveries after forged forms: %+v", ds)
	}
}

// Test events are limited per member (webhook.TestBurst, then one every
// webhook.TestEvery): the next is refused with 429, Retry-After and a
// message saying the figure; another member is not affected.
func TestWebWebhookTestEventLimit(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{PrivateWebhooks: true})
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
	mustContain(t, "the refusal", p, "Too many test events and redeliveries: 5 at most, then one a minute. Try again in")
	if ds := memberDeliveries(t, f.store, aliceID(t, f), id, 100); len(ds) != webhook.TestBurst {
		t.Fatalf("%d deliveries queued, want %d", len(ds), webhook.TestBurst)
	}
	bob := newBrowser(t, base, nil)
	bob.signIn("bob", f.bobKey)
	_, _, bobs := bob.addWebhook("http://127.0.0.1:9/hook")
	page = bob.get(fmt.Sprintf("/webhooks/%d", bobs))
	if p := bob.post(fmt.Sprintf("/webhooks/%d/test", bobs), url.Values{"csrf": {page.csrf(t)}}); p.status != http.StatusSeeOther {
		t.Fatalf("bob's test event after alice's were refused: %d", p.status)
	}
}

// failedDelivery queues a message to the member's endpoint and fails its
// attempt, as the worker would with a 500: a delivery to send again.
func failedDelivery(t *testing.T, f *fixture, memberID, endpointID int64, msgID string) int64 {
	t.Helper()
	ids, err := f.store.Enqueue(context.Background(),
		webhook.NewDelivery(certorder.Endpoint{ID: endpointID, MemberID: memberID}, "webhook.test", msgID, []byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	failAttempt(t, f, memberID, endpointID, ids[0])
	return ids[0]
}

// failAttempt claims the delivery and records a failed attempt of it
// (HTTP 500), as the worker would, unless it is finished already.
func failAttempt(t *testing.T, f *fixture, memberID, endpointID, deliveryID int64) {
	t.Helper()
	ctx := context.Background()
	for _, d := range memberDeliveries(t, f.store, memberID, endpointID, 100) {
		if d.ID == deliveryID && d.State != webhook.StatePending {
			return
		}
	}
	jobs, err := f.store.ClaimJobs(ctx, queue.Claim{Kinds: []string{queue.KindWebhook}, Owner: "test",
		At: time.Now().Add(time.Second), Lease: time.Minute, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.ID == deliveryID {
			if err := f.store.FinishJob(ctx, queue.Outcome{JobID: j.ID, Owner: "test", At: time.Now(), State: queue.Failed,
				Result: []byte(`{"status":500,"class":"http_status"}`)}); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("delivery %d was not due", deliveryID)
}

// Redeliveries share the test events' limit: after 3 test events and 2
// redeliveries the next redelivery, and the next test event, are refused
// with 429; a redelivery refused as still pending does not count.
// (Without it, a member sent 82 redeliveries in 20 s, each an attempt on
// the worker's places and an audit entry.)
func TestWebWebhookRedeliverLimit(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{PrivateWebhooks: true})
	alice := newBrowser(t, base, nil)
	alice.signIn("alice", f.aliceKey)
	_, _, id := alice.addWebhook("http://127.0.0.1:9/hook")
	did := failedDelivery(t, f, aliceID(t, f), id, "msg_redeliver")
	// redeliver sends the delivery again once the worker has finished it
	// (failAttempt: what the worker would do).
	redeliver := func() page {
		failAttempt(t, f, aliceID(t, f), id, did)
		form := url.Values{"csrf": {alice.get(fmt.Sprintf("/webhooks/%d", id)).csrf(t)}}
		return alice.post(fmt.Sprintf("/webhooks/%d/deliveries/%d/redeliver", id, did), form)
	}
	test := func() page {
		form := url.Values{"csrf": {alice.get(fmt.Sprintf("/webhooks/%d", id)).csrf(t)}}
		return alice.post(fmt.Sprintf("/webhooks/%d/test", id), form)
	}
	for i, send := range []func() page{test, test, test, redeliver} {
		if p := send(); p.status != http.StatusSeeOther {
			t.Fatalf("message %d by hand: %d", i+1, p.status)
		}
	}
	// Still pending: not sent, so not counted.
	form := url.Values{"csrf": {alice.get(fmt.Sprintf("/webhooks/%d", id)).csrf(t)}}
	if p := alice.post(fmt.Sprintf("/webhooks/%d/deliveries/%d/redeliver", id, did), form); p.status != http.StatusConflict {
		t.Fatalf("redelivering a pending delivery: %d", p.status)
	}
	if p := redeliver(); p.status != http.StatusSeeOther {
		t.Fatalf("the fifth message by hand: %d", p.status)
	}
	for name, send := range map[string]func() page{"redelivery": redeliver, "test event": test} {
		p := send()
		if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
			t.Fatalf("a %s past the limit: %d, Retry-After %q", name, p.status, p.header.Get("Retry-After"))
		}
		mustContain(t, "the refusal", p, "Too many test events and redeliveries: 5 at most")
	}
	if ds := memberDeliveries(t, f.store, aliceID(t, f), id, 100); len(ds) != 4 || ds[len(ds)-1].State != webhook.StateFailed {
		t.Fatalf("deliveries: %+v", ds)
	}
}
