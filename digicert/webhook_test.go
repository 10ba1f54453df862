package digicert_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/poll"
)

const hookSecret = "webhook-secret-of-at-least-32-characters"

// listener is a webhook listener on loopback that keeps what it gets.
type listener struct {
	url    string
	mu     sync.Mutex
	events []map[string]any
	keys   []string
	status int
}

func newListener(t *testing.T) *listener {
	l := &listener{status: 200}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev map[string]any
		json.Unmarshal(body, &ev)
		l.mu.Lock()
		l.events = append(l.events, ev)
		l.keys = append(l.keys, r.Header.Get("X-WEBHOOK-KEY"))
		status := l.status
		l.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(ts.Close)
	l.url = ts.URL + "/certcentral/webhook"
	return l
}

// activate has CertCentral send webhook id's challenge to l, which has had
// no event before, and answers it with the token that came.
func (l *listener) activate(t *testing.T, c *digicert.Client, id int64) {
	t.Helper()
	ctx := context.Background()
	if err := c.SendWebhookChallenge(ctx, id); err != nil {
		t.Fatal(err)
	}
	var token string
	poll.Until(t, 10*time.Second, "the challenge", func() bool {
		events, _ := l.got()
		if len(events) == 1 {
			token, _ = events[0]["data"].(map[string]any)["token"].(string)
		}
		return token != ""
	})
	if err := c.CheckWebhookChallenge(ctx, id, token); err != nil {
		t.Fatal(err)
	}
}

func (l *listener) got() ([]map[string]any, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events), slices.Clone(l.keys)
}

// The webhook's life as the "Webhooks" pages describe it, against the
// simulator: none, created pending, a second create refused, tested,
// challenged, verified (active), updated (a new endpoint pending again),
// and the event log; the secret travels in X-WEBHOOK-KEY only.
func TestWebhookLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{NoLimits: true})
	ctx := context.Background()
	l := newListener(t)
	if _, err := e.c.Webhook(ctx); !errors.Is(err, digicert.ErrNoWebhook) {
		t.Fatalf("no webhook yet: %v", err)
	}
	cfg := digicert.WebhookConfig{Endpoint: l.url, Secret: hookSecret, Events: digicert.OrderEvents,
		Settings: digicert.WebhookSettings{InstantIssue: "1"}}
	id, err := e.c.CreateWebhook(ctx, cfg)
	if err != nil || id <= 0 {
		t.Fatalf("create: %d, %v", id, err)
	}
	if _, err := e.c.CreateWebhook(ctx, cfg); !errors.Is(err, digicert.ErrWebhookExists) {
		t.Errorf("a second create: %v", err)
	}
	wh, err := e.c.Webhook(ctx)
	if err != nil || wh.ID != id || wh.Status != digicert.WebhookPending || wh.Endpoint != l.url || wh.Settings.InstantIssue != "1" {
		t.Fatalf("listed: %v %+v, %v", wh, wh.Settings, err)
	}
	if s := fmt.Sprintf("%v %+v %#v %s %#v", wh, wh, wh, cfg, cfg); strings.Contains(s, hookSecret) {
		t.Errorf("printing the webhook shows its secret: %s", s)
	}
	if err := e.c.ActivateWebhook(ctx, id); err == nil {
		t.Error("activated before its challenge")
	}
	if err := e.c.TestWebhookEndpoint(ctx, l.url, hookSecret); err != nil {
		t.Fatalf("test event: %v", err)
	}
	if err := e.c.SendWebhookChallenge(ctx, id); err != nil {
		t.Fatal(err)
	}
	var token string
	poll.Until(t, 10*time.Second, "the challenge", func() bool {
		events, _ := l.got()
		for _, ev := range events {
			if data, _ := ev["data"].(map[string]any); ev["event"] == digicert.EventChallenge {
				token, _ = data["token"].(string)
				return data["webhook_id"] == float64(id)
			}
		}
		return false
	})
	if err := e.c.CheckWebhookChallenge(ctx, id, token+"x"); err == nil || !strings.Contains(err.Error(), "webhook_invalid_token") {
		t.Errorf("a wrong token: %v", err)
	}
	if err := e.c.CheckWebhookChallenge(ctx, id, token); err != nil {
		t.Fatal(err)
	}
	if wh, _ = e.c.Webhook(ctx); wh.Status != digicert.WebhookActive {
		t.Errorf("after the challenge: %s", wh.Status)
	}
	events, keys := l.got()
	if events[0]["event"] != digicert.EventTest || len(keys) != 2 || keys[0] != hookSecret || keys[1] != hookSecret {
		t.Errorf("the listener got %v with keys %q", events, keys)
	}

	// A new endpoint must be verified again; its events wait till then.
	l2 := newListener(t)
	cfg.Endpoint = l2.url
	if err := e.c.UpdateWebhook(ctx, id, cfg); err != nil {
		t.Fatal(err)
	}
	if wh, _ = e.c.Webhook(ctx); wh.Status != digicert.WebhookPending || wh.Endpoint != l2.url {
		t.Errorf("after a new endpoint: %v", wh)
	}
	log, err := e.c.WebhookEvents(ctx, 10)
	if err != nil || len(log) != 2 || log[0].Event != digicert.EventTest || log[1].Event != digicert.EventChallenge ||
		log[1].ResponseCode != 200 || log[1].Status != "success" {
		t.Errorf("event log: %+v, %v", log, err)
	}

	// A listener answering 500: the test event says so.
	l2.mu.Lock()
	l2.status = 500
	l2.mu.Unlock()
	if err := e.c.TestWebhookEndpoint(ctx, l2.url, hookSecret); err == nil || !strings.Contains(err.Error(), "webhook_endpoint_error") {
		t.Errorf("a failing endpoint's test: %v", err)
	}
}

// The simulator sends events to loopback only, refuses a short secret,
// sends an order's events only while the webhook is active and subscribed
// to them, and certificate_issued for an instant issue only with
// instant_issue_webhook_notification "1".
func TestWebhookEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{NoLimits: true})
	ctx := context.Background()
	for _, bad := range []digicert.WebhookConfig{
		{Endpoint: "https://certorder.example/certcentral/webhook"},
		{Endpoint: "http://192.0.2.1/certcentral/webhook"},
		{Endpoint: "ftp://127.0.0.1/x"},
		{Endpoint: "https://127.0.0.1/x", Secret: "short"},
	} {
		if _, err := e.c.CreateWebhook(ctx, bad); err == nil {
			t.Errorf("created with %q", bad.Endpoint)
		}
	}
	l := newListener(t)
	id, err := e.c.CreateWebhook(ctx, digicert.WebhookConfig{Endpoint: l.url, Secret: hookSecret,
		Events: []string{digicert.EventCertificateRevoked, digicert.EventCertificateIssued}})
	if err != nil {
		t.Fatal(err)
	}
	o1, _ := e.sim.AddOrder(digicerttest.OrderSpec{})
	e.sim.Issue(o1, e.clock.Now().Add(time.Hour)) // pending: no event
	l.activate(t, e.c, id)
	o2, _ := e.sim.AddOrder(digicerttest.OrderSpec{})
	o3, _ := e.sim.AddOrder(digicerttest.OrderSpec{})
	e.sim.Issue(o2, e.clock.Now().Add(time.Hour))
	e.sim.Issue(o3, e.clock.Now()) // the instant it was placed: not told, instant_issue_webhook_notification is not "1"
	e.sim.SetStatus(o1, "revoked", e.clock.Now())
	e.sim.SetStatus(o2, "rejected", e.clock.Now()) // not subscribed
	e.sim.SetStatus(o2, "canceled", e.clock.Now()) // no such event
	e.sim.SetStatus(o3, "revoked", e.clock.Now())  // the last: the sender sends in order
	want := []string{fmt.Sprintf("certificate_issued %d", o2), fmt.Sprintf("certificate_revoked %d", o1),
		fmt.Sprintf("certificate_revoked %d", o3)}
	var got []string
	poll.Until(t, 10*time.Second, "the events", func() bool {
		got = nil
		for _, d := range e.sim.WebhookDeliveries()[1:] {
			got = append(got, fmt.Sprintf("%s %d", d.Event, d.OrderID))
		}
		return len(got) > 0 && got[len(got)-1] == want[2]
	})
	if !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	events, _ := l.got()
	if data, _ := events[len(events)-2]["data"].(map[string]any); data["order_id"] != float64(o1) || data["certificate_id"] == nil {
		t.Errorf("the revocation's body: %v", events[len(events)-2])
	}
}

// The simulator's control endpoint (dev simulate's) makes each change as
// CertCentral would and announces it as CertCentral does: a revocation
// and an issue at once; a reissue or renewal issued at once is
// certificate_issued (the renewal, issued the instant it is placed, only
// with instant_issue_webhook_notification "1"); a pending one nothing
// until issued. It answers only a JSON POST addressed to loopback, and
// says what it refuses.
func TestSimulateControl(t *testing.T) {
	t.Parallel()
	e := newEnv(t, digicerttest.Options{NoLimits: true})
	ctx := context.Background()
	base := strings.TrimSuffix(e.url, digicerttest.BasePath) + digicerttest.ControlPath
	post := func(path, contentType, host, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		json.NewDecoder(resp.Body).Decode(&doc)
		return resp.StatusCode, doc
	}
	simulate := func(id int64, action string, pending bool) map[string]any {
		t.Helper()
		code, doc := post(fmt.Sprintf("%d/%s", id, action), "application/json", "", fmt.Sprintf(`{"pending":%v}`, pending))
		if code != 200 {
			t.Fatalf("%s %d: %d %v", action, id, code, doc)
		}
		return doc
	}

	l := newListener(t)
	id, err := e.c.CreateWebhook(ctx, digicert.WebhookConfig{Endpoint: l.url, Secret: hookSecret, Events: digicert.OrderEvents})
	if err != nil {
		t.Fatal(err)
	}
	l.activate(t, e.c, id)
	o1, _ := e.sim.AddOrder(digicerttest.OrderSpec{ValidityYears: 2})
	o2, _ := e.sim.AddOrder(digicerttest.OrderSpec{})
	e.clock.Advance(time.Hour)

	// What each change leaves and tells: the event, or why none.
	for _, c := range []struct {
		id      int64
		action  string
		pending bool
		status  string
		event   string // or the reason there is none
	}{
		{o1, "issue", false, "issued", "certificate_issued"},
		{o2, "issue", false, "issued", "certificate_issued"},
		{o1, "reissue", false, "issued", "certificate_issued"},
		{o1, "reissue", true, "reissue_pending", "CertCentral sends none for a reissue started"},
		{o1, "issue", false, "issued", "certificate_issued"},
		{o1, "renew", false, "issued", "instant_issue_webhook_notification"},
		{o2, "renew", true, "pending", "CertCentral sends none for an order placed"},
		{o2, "revoke", false, "revoked", "certificate_revoked"},
	} {
		e.clock.Advance(time.Minute)
		doc := simulate(c.id, c.action, c.pending)
		what := fmt.Sprint(doc["event"], doc["no_event"])
		if doc["status"] != c.status || !strings.Contains(what, c.event) {
			t.Errorf("%s %d (pending %v): %v, want status %s and %q", c.action, c.id, c.pending, doc, c.status, c.event)
		}
		if doc["event"] != nil && doc["event_endpoint"] != l.url {
			t.Errorf("%s %d: the event's endpoint %v", c.action, c.id, doc["event_endpoint"])
		}
	}
	renewal := e.sim.RenewedBy(o2)
	e.clock.Advance(time.Hour)
	if doc := simulate(renewal, "issue", false); doc["event"] != "certificate_issued" {
		t.Errorf("the pending renewal issued: %v", doc)
	}
	want := fmt.Sprintf("certificate_issued %d,certificate_issued %d,certificate_issued %d,certificate_issued %d,certificate_revoked %d,certificate_issued %d",
		o1, o2, o1, o1, o2, renewal)
	var got []string
	poll.Until(t, 10*time.Second, "the events", func() bool {
		got = nil
		for _, d := range e.sim.WebhookDeliveries() {
			if d.OrderID != 0 {
				got = append(got, fmt.Sprintf("%s %d", d.Event, d.OrderID))
			}
		}
		return strings.Join(got, ",") == want
	})

	// Refusals: nothing changes.
	before, _ := e.sim.OrderInfo(o1)
	for _, r := range []struct {
		path, contentType, host, body string
		code                          int
		want                          string
	}{
		{fmt.Sprintf("%d/revoke", o1), "application/json", "certorder.example", "{}", 403, "loopback"},
		{fmt.Sprintf("%d/revoke", o1), "text/plain", "", "{}", 415, "JSON"},
		{fmt.Sprintf("%d/revoke", o1), "application/json", "", `{"pending":1}`, 400, "pending"},
		{fmt.Sprintf("%d/revoke", o1), "application/json", "", `{"force":true}`, 400, "pending"},
		{fmt.Sprintf("%d/cancel", o1), "application/json", "", "{}", 404, "want one of issue, revoke, reissue, renew"},
		{"x/revoke", "application/json", "", "{}", 404, "order number"},
		{"999/revoke", "application/json", "", "{}", 404, "no order 999"},
		{fmt.Sprintf("%d/issue", o1), "application/json", "", "{}", 409, "only a pending order"},
		{fmt.Sprintf("%d/renew", o1), "application/json", "", "{}", 409, "already renewed"},
		{fmt.Sprintf("%d/reissue", o2), "application/json", "", "{}", 409, "is revoked"},
	} {
		code, doc := post(r.path, r.contentType, r.host, r.body)
		if msg, _ := doc["error"].(string); code != r.code || !strings.Contains(msg, r.want) {
			t.Errorf("%s (%s, host %q, %s): %d %v, want %d and %q", r.path, r.contentType, r.host, r.body, code, doc, r.code, r.want)
		}
	}
	resp, err := http.Get(base + fmt.Sprintf("%d/revoke", o1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	if after, _ := e.sim.OrderInfo(o1); string(after) != string(before) {
		t.Errorf("a refusal changed the order")
	}
	// The control endpoint counts as no request to CertCentral's API.
	if n := e.sim.Requests()[digicerttest.EndpointOther]; n != 0 {
		t.Errorf("%d requests counted", n)
	}
}
