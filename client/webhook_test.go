package client_test

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/certorder/certorder/client"
)

func newSecret(t *testing.T) string {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// signed is a webhook signed by the Standard Webhooks reference library
// with each of secrets (several: a rotation), at ts.
func signed(t *testing.T, id string, ts time.Time, body string, secrets ...string) http.Header {
	t.Helper()
	var sigs []string
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wh.Sign(id, ts, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, sig)
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", strings.Join(sigs, " "))
	return h
}

var sent = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func clockAt(t time.Time) client.WebhookOption {
	return client.WithWebhookClock(func() time.Time { return t })
}

const renewedBody = `{"type":"order.renewed","timestamp":"2026-11-21T09:59:58.25Z","data":{"order_id":10001,"renewed_order_id":10002}}`

func TestVerifyWebhookFromReference(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	h := signed(t, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", sent, renewedBody, secret)
	ev, err := client.VerifyWebhook(secret, h, []byte(renewedBody), clockAt(sent.Add(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W" || ev.Type != client.WebhookOrderRenewed ||
		!ev.Timestamp.Equal(time.Date(2026, 11, 21, 9, 59, 58, 250_000_000, time.UTC)) {
		t.Fatalf("event %+v", ev)
	}
	if old, renewed, ok := ev.Renewed(); !ok || old != 10001 || renewed != 10002 {
		t.Fatalf("Renewed() = %d, %d, %v", old, renewed, ok)
	}
	if _, _, _, ok := ev.StatusChanged(); ok {
		t.Error("an order.renewed event reads as order.status_changed")
	}
	if _, _, _, ok := ev.Expiring(); ok {
		t.Error("an order.renewed event reads as order.expiring")
	}

	// With the real clock too (the default), at a current timestamp.
	now := time.Now()
	if _, err := client.VerifyWebhook(secret, signed(t, "msg_1", now, renewedBody, secret), []byte(renewedBody)); err != nil {
		t.Fatalf("real clock: %v", err)
	}
	// A secret given without its prefix, as some tools show it.
	if _, err := client.VerifyWebhook(strings.TrimPrefix(secret, "whsec_"), h, []byte(renewedBody), clockAt(sent)); err != nil {
		t.Fatalf("secret without whsec_: %v", err)
	}
}

func TestVerifyWebhookHelpers(t *testing.T) {
	t.Parallel()
	secret := newSecret(t)
	verify := func(body string) *client.WebhookEvent {
		t.Helper()
		ev, err := client.VerifyWebhook(secret, signed(t, "msg_1", sent, body, secret), []byte(body), clockAt(sent))
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ev := verify(`{"type":"order.status_changed","timestamp":"2026-11-21T10:00:00Z","data":{"order_id":10003,"status":"issued","previous_status":"pending"}}`)
	if id, status, prev, ok := ev.StatusChanged(); !ok || id != 10003 || status != "issued" || prev != "pending" {
		t.Errorf("StatusChanged() = %d, %q, %q, %v", id, status, prev, ok)
	}
	ev = verify(`{"type":"order.expiring","timestamp":"2026-11-21T10:00:00Z","data":{"order_id":10004,"valid_till":"2026-12-21","days_remaining":30}}`)
	if id, till, days, ok := ev.Expiring(); !ok || id != 10004 || !till.Equal(time.Date(2026, 12, 21, 0, 0, 0, 0, time.UTC)) || days != 30 {
		t.Errorf("Expiring() = %d, %v, %d, %v", id, till, days, ok)
	}
	ev = verify(`{"type":"order.expiring","timestamp":"2026-11-21T10:00:00Z","data":{"order_id":10004,"valid_till":"soon","days_remaining":30}}`)
	if _, _, _, ok := ev.Expiring(); ok {
		t.Error("Expiring() reads a valid_till that is not a date")
	}
	ev = verify(`{"type":"order.reissued","timestamp":"2026-11-21T10:00:00Z","data":{"order_id":10003,` +
		`"certificate":{"id":530003,"serial_number":"0A2","thumbprint":"B2","valid_from":"2026-11-21","valid_till":"2027-06-08"},` +
		`"previous_certificate":{"id":520003,"serial_number":"0A1","thumbprint":"B1","valid_till":"2026-11-26"}}}`)
	if id, cert, prev, ok := ev.Reissued(); !ok || id != 10003 || cert != (client.ReissuedCertificate{530003, "0A2", "B2", "2026-11-21", "2027-06-08"}) ||
		prev != (client.ReissuedCertificate{ID: 520003, SerialNumber: "0A1", Thumbprint: "B1", ValidTill: "2026-11-26"}) {
		t.Errorf("Reissued() = %d, %+v, %+v, %v", id, cert, prev, ok)
	}
	ev = verify(`{"type":"order.plan_ending","timestamp":"2026-11-21T10:00:00Z","data":{"order_id":10004,"order_valid_till":"2027-02-19","days_remaining":90,"valid_till":"2027-02-19","next_step":"renew"}}`)
	if id, till, days, step, ok := ev.PlanEnding(); !ok || id != 10004 || !till.Equal(time.Date(2027, 2, 19, 0, 0, 0, 0, time.UTC)) || days != 90 || step != "renew" {
		t.Errorf("PlanEnding() = %d, %v, %d, %q, %v", id, till, days, step, ok)
	}
	if _, _, _, ok := ev.Reissued(); ok {
		t.Error("Reissued() reads an order.plan_ending event")
	}
	ev = verify(`{"type":"order.renewed","timestamp":"2026-11-21T10:00:00Z","data":{"order_id":10001}}`)
	if _, _, ok := ev.Renewed(); ok {
		t.Error("Renewed() reads an event without renewed_order_id")
	}
	ev = verify(`{"type":"webhook.test","timestamp":"2026-11-21T10:00:00Z","data":{"message":"hi"}}`)
	if ev.Type != client.WebhookTest || string(ev.Data) != `{"message":"hi"}` {
		t.Errorf("test event %+v", ev)
	}
	// A future type is returned, not refused.
	if ev = verify(`{"type":"order.revoked","timestamp":"2026-11-21T10:00:00Z","data":{}}`); ev.Type != "order.revoked" {
		t.Errorf("unknown type: %+v", ev)
	}
}

func TestVerifyWebhookRefusals(t *testing.T) {
	t.Parallel()
	secret, other := newSecret(t), newSecret(t)
	good := signed(t, "msg_1", sent, renewedBody, secret)
	with := func(name, value string) http.Header {
		h := good.Clone()
		if value == "" {
			h.Del(name)
		} else {
			h.Set(name, value)
		}
		return h
	}
	sig := good.Get("webhook-signature")
	flipped := sig[:len(sig)-5] + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, sig[len(sig)-5:len(sig)-4]) + sig[len(sig)-4:]

	for _, tc := range []struct {
		name   string
		secret string
		header http.Header
		body   string
		now    time.Time
		want   error
	}{
		{"wrong secret", other, good, renewedBody, sent, client.ErrWebhookSignature},
		{"changed body", secret, good, strings.Replace(renewedBody, "10002", "10003", 1), sent, client.ErrWebhookSignature},
		{"changed id", secret, with("webhook-id", "msg_2"), renewedBody, sent, client.ErrWebhookSignature},
		{"changed timestamp", secret, with("webhook-timestamp", strconv.FormatInt(sent.Unix()+1, 10)), renewedBody, sent, client.ErrWebhookSignature},
		{"bad signature", secret, with("webhook-signature", flipped), renewedBody, sent, client.ErrWebhookSignature},
		{"signature not base64", secret, with("webhook-signature", "v1,!!!"), renewedBody, sent, client.ErrWebhookSignature},
		{"other scheme only", secret, with("webhook-signature", "v1a,"+strings.TrimPrefix(sig, "v1,")), renewedBody, sent, client.ErrWebhookSignature},
		{"no version", secret, with("webhook-signature", strings.TrimPrefix(sig, "v1,")), renewedBody, sent, client.ErrWebhookSignature},
		{"no webhook-id", secret, with("webhook-id", ""), renewedBody, sent, client.ErrWebhookSignature},
		{"no webhook-signature", secret, with("webhook-signature", ""), renewedBody, sent, client.ErrWebhookSignature},
		{"no webhook-timestamp", secret, with("webhook-timestamp", ""), renewedBody, sent, client.ErrWebhookTimestamp},
		{"timestamp not a number", secret, with("webhook-timestamp", "yesterday"), renewedBody, sent, client.ErrWebhookTimestamp},
		{"stale", secret, good, renewedBody, sent.Add(5*time.Minute + time.Second), client.ErrWebhookTimestamp},
		{"future", secret, good, renewedBody, sent.Add(-5*time.Minute - time.Second), client.ErrWebhookTimestamp},
		{"stale by days", secret, good, renewedBody, sent.Add(72 * time.Hour), client.ErrWebhookTimestamp},
	} {
		ev, err := client.VerifyWebhook(tc.secret, tc.header, []byte(tc.body), clockAt(tc.now))
		if !errors.Is(err, tc.want) || ev != nil {
			t.Errorf("%s: %v, %v; want %v", tc.name, ev, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), strings.TrimPrefix(tc.secret, "whsec_")[:10])) {
			t.Errorf("%s: the error quotes the secret: %v", tc.name, err)
		}
	}

	// Just inside the tolerance, either way.
	for _, now := range []time.Time{sent.Add(5 * time.Minute), sent.Add(-5 * time.Minute)} {
		if _, err := client.VerifyWebhook(secret, good, []byte(renewedBody), clockAt(now)); err != nil {
			t.Errorf("clock at %v: %v", now.Sub(sent), err)
		}
	}

	// A malformed secret is the receiver's mistake: neither sentinel, and not quoted.
	for _, bad := range []string{"", "whsec_", "whsec_not*base64*secret"} {
		_, err := client.VerifyWebhook(bad, good, []byte(renewedBody), clockAt(sent))
		if err == nil || errors.Is(err, client.ErrWebhookSignature) || errors.Is(err, client.ErrWebhookTimestamp) ||
			(len(bad) > len("whsec_") && strings.Contains(err.Error(), strings.TrimPrefix(bad, "whsec_"))) {
			t.Errorf("secret %q: %v", bad, err)
		}
	}
	// A signed body that is not an event.
	h := signed(t, "msg_1", sent, `[1,2,3]`, secret)
	if _, err := client.VerifyWebhook(secret, h, []byte(`[1,2,3]`), clockAt(sent)); err == nil ||
		errors.Is(err, client.ErrWebhookSignature) || errors.Is(err, client.ErrWebhookTimestamp) {
		t.Errorf("signed non-event: %v", err)
	}
}

// During a rotation both signatures are sent; a receiver holding either
// secret accepts the webhook, one holding neither refuses it.
func TestVerifyWebhookRotation(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret_, third := newSecret(t), newSecret(t), newSecret(t)
	h := signed(t, "msg_1", sent, renewedBody, newSecret_, oldSecret)
	if sigs := strings.Fields(h.Get("webhook-signature")); len(sigs) != 2 {
		t.Fatalf("signature header %q", h.Get("webhook-signature"))
	}
	for name, s := range map[string]string{"old": oldSecret, "new": newSecret_} {
		if _, err := client.VerifyWebhook(s, h, []byte(renewedBody), clockAt(sent)); err != nil {
			t.Errorf("%s secret: %v", name, err)
		}
	}
	if _, err := client.VerifyWebhook(third, h, []byte(renewedBody), clockAt(sent)); !errors.Is(err, client.ErrWebhookSignature) {
		t.Errorf("a third secret: %v", err)
	}
	// Other schemes and garbage in the list are skipped, not fatal.
	h.Set("webhook-signature", "v1a,AAAA garbage "+h.Get("webhook-signature"))
	if _, err := client.VerifyWebhook(oldSecret, h, []byte(renewedBody), clockAt(sent)); err != nil {
		t.Errorf("with other entries: %v", err)
	}
}
