package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The event types certorder sends (data described at each helper of
// WebhookEvent). A receiver should ignore types it does not know: new
// ones may come.
const (
	WebhookOrderRenewed       = "order.renewed"
	WebhookOrderStatusChanged = "order.status_changed"
	WebhookOrderReissued      = "order.reissued"
	WebhookOrderExpiring      = "order.expiring"
	WebhookOrderPlanEnding    = "order.plan_ending"
	WebhookTest               = "webhook.test" // "send a test event" on the web page
)

// Why VerifyWebhook refused a request; test with errors.Is.
var (
	// ErrWebhookSignature: no webhook-id or webhook-signature header, or no
	// v1 signature in it matches the secret.
	ErrWebhookSignature = errors.New("webhook signature not valid")
	// ErrWebhookTimestamp: the webhook-timestamp header is missing, not a
	// number, or more than the tolerance (5 minutes) from now, either way.
	ErrWebhookTimestamp = errors.New("webhook timestamp missing or out of tolerance")
)

// WebhookTolerance is how far webhook-timestamp may be from the receiver's
// clock, either way, before a webhook is refused as a replay.
const WebhookTolerance = 5 * time.Minute

// WebhookEvent is a verified webhook: ID is its webhook-id (the same on
// every retry: keep the IDs you have handled and skip repeats), Timestamp
// when the event happened, Data its data as sent.
type WebhookEvent struct {
	ID        string
	Type      string
	Timestamp time.Time
	Data      json.RawMessage
}

// Renewed reads an order.renewed event: order oldID was renewed by newID.
// ok is false for another type or unreadable data.
func (e *WebhookEvent) Renewed() (oldID, newID int64, ok bool) {
	var d struct {
		OrderID        *int64 `json:"order_id"`
		RenewedOrderID *int64 `json:"renewed_order_id"`
	}
	if !e.decode(WebhookOrderRenewed, &d) || d.OrderID == nil || d.RenewedOrderID == nil {
		return 0, 0, false
	}
	return *d.OrderID, *d.RenewedOrderID, true
}

// StatusChanged reads an order.status_changed event: order orderID went
// from status previous to status (the CA's words, e.g. "pending", "issued").
func (e *WebhookEvent) StatusChanged() (orderID int64, status, previous string, ok bool) {
	var d struct {
		OrderID        *int64 `json:"order_id"`
		Status         string `json:"status"`
		PreviousStatus string `json:"previous_status"`
	}
	if !e.decode(WebhookOrderStatusChanged, &d) || d.OrderID == nil {
		return 0, "", "", false
	}
	return *d.OrderID, d.Status, d.PreviousStatus, true
}

// ReissuedCertificate is a certificate an order.reissued event names: the
// new one (with ValidFrom) or the one it replaced. Dates are YYYY-MM-DD.
type ReissuedCertificate struct {
	ID           int64  `json:"id"`
	SerialNumber string `json:"serial_number"`
	Thumbprint   string `json:"thumbprint"`
	ValidFrom    string `json:"valid_from"`
	ValidTill    string `json:"valid_till"`
}

// Reissued reads an order.reissued event: order orderID, same number, has
// a new certificate cert in place of previous (the ACME directory URL
// stays the same: install the new certificate).
func (e *WebhookEvent) Reissued() (orderID int64, cert, previous ReissuedCertificate, ok bool) {
	var d struct {
		OrderID  *int64              `json:"order_id"`
		Cert     ReissuedCertificate `json:"certificate"`
		Previous ReissuedCertificate `json:"previous_certificate"`
	}
	if !e.decode(WebhookOrderReissued, &d) || d.OrderID == nil || d.Cert.SerialNumber == "" {
		return 0, cert, previous, false
	}
	return *d.OrderID, d.Cert, d.Previous, true
}

// PlanEnding reads an order.plan_ending event: order orderID's plan (the
// contract) ends on planTill (a date, midnight UTC), daysRemaining days
// after the event, and no renewal exists; nextStep is the order's next
// step then (renew, or reissue while its certificate ends first).
func (e *WebhookEvent) PlanEnding() (orderID int64, planTill time.Time, daysRemaining int, nextStep string, ok bool) {
	var d struct {
		OrderID       *int64 `json:"order_id"`
		PlanTill      string `json:"order_valid_till"`
		DaysRemaining int    `json:"days_remaining"`
		NextStep      string `json:"next_step"`
	}
	if !e.decode(WebhookOrderPlanEnding, &d) || d.OrderID == nil {
		return 0, time.Time{}, 0, "", false
	}
	t, err := time.Parse(time.DateOnly, d.PlanTill)
	if err != nil {
		return 0, time.Time{}, 0, "", false
	}
	return *d.OrderID, t, d.DaysRemaining, d.NextStep, true
}

// Expiring reads an order.expiring event: order orderID, without an issued
// renewal, has a certificate that ends on validTill (a date, midnight UTC),
// daysRemaining days after the event. The event's data also names the
// plan's end (order_valid_till) and the next step (next_step).
func (e *WebhookEvent) Expiring() (orderID int64, validTill time.Time, daysRemaining int, ok bool) {
	var d struct {
		OrderID       *int64 `json:"order_id"`
		ValidTill     string `json:"valid_till"`
		DaysRemaining int    `json:"days_remaining"`
	}
	if !e.decode(WebhookOrderExpiring, &d) || d.OrderID == nil {
		return 0, time.Time{}, 0, false
	}
	t, err := time.Parse(time.DateOnly, d.ValidTill)
	if err != nil {
		return 0, time.Time{}, 0, false
	}
	return *d.OrderID, t, d.DaysRemaining, true
}

func (e *WebhookEvent) decode(typ string, v any) bool {
	return e != nil && e.Type == typ && json.Unmarshal(e.Data, v) == nil
}

// WebhookOption changes how VerifyWebhook checks.
type WebhookOption func(*webhookCheck)

type webhookCheck struct {
	now func() time.Time
}

// WithWebhookClock sets the clock the timestamp is checked against
// (default time.Now); for tests.
func WithWebhookClock(now func() time.Time) WebhookOption {
	return func(c *webhookCheck) { c.now = now }
}

// VerifyWebhook checks a webhook from certorder, following the Standard
// Webhooks scheme, and returns its event. secret is the endpoint's signing
// secret (whsec_...); header and body are the request's, body exactly as
// received (do not decode and re-encode it first). It accepts the request
// when any v1 signature in webhook-signature matches (several are sent
// while a secret is rotated) and webhook-timestamp is within 5 minutes of
// now. Refusals match ErrWebhookSignature or ErrWebhookTimestamp.
//
// A receiver:
//
//	http.HandleFunc("POST /certorder-hook", func(w http.ResponseWriter, r *http.Request) {
//		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
//		if err != nil {
//			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
//			return
//		}
//		ev, err := client.VerifyWebhook(os.Getenv("CERTORDER_WEBHOOK_SECRET"), r.Header, body)
//		if err != nil {
//			http.Error(w, "not a valid webhook", http.StatusUnauthorized)
//			return
//		}
//		if old, renewed, ok := ev.Renewed(); ok {
//			log.Printf("order %d was renewed by order %d", old, renewed)
//		}
//		w.WriteHeader(http.StatusNoContent) // any 2xx: delivered; 410: stop sending
//	})
func VerifyWebhook(secret string, header http.Header, body []byte, opts ...WebhookOption) (*WebhookEvent, error) {
	check := webhookCheck{now: time.Now}
	for _, o := range opts {
		o(&check)
	}
	key, err := webhookKey(secret)
	if err != nil {
		return nil, err
	}
	id := header.Get("webhook-id")
	sigs := header.Get("webhook-signature")
	tsText := header.Get("webhook-timestamp")
	if id == "" {
		return nil, fmt.Errorf("client: no webhook-id header: %w", ErrWebhookSignature)
	}
	if sigs == "" {
		return nil, fmt.Errorf("client: no webhook-signature header: %w", ErrWebhookSignature)
	}
	if tsText == "" {
		return nil, fmt.Errorf("client: no webhook-timestamp header: %w", ErrWebhookTimestamp)
	}
	secs, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil || secs < 0 || strings.HasPrefix(tsText, "+") {
		return nil, fmt.Errorf("client: webhook-timestamp is not unix seconds: %w", ErrWebhookTimestamp)
	}

	want := WebhookMAC(key, id, tsText, body)
	matched := false
	for _, s := range strings.Fields(sigs) {
		version, b64, found := strings.Cut(s, ",")
		if !found || version != "v1" {
			continue // another scheme (v1a, ...) or garbage: not ours to judge
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			matched = true
			break
		}
	}
	if !matched {
		return nil, fmt.Errorf("client: no v1 signature matches the secret: %w", ErrWebhookSignature)
	}

	// Checked after the signature, so that this error means "authentic but
	// stale or early": a replay, or a clock off by minutes.
	now := check.now()
	ts := time.Unix(secs, 0)
	if d := now.Sub(ts); d > WebhookTolerance || d < -WebhookTolerance {
		return nil, fmt.Errorf("client: webhook-timestamp %s is %s from now: %w",
			ts.UTC().Format(time.RFC3339), d.Round(time.Second), ErrWebhookTimestamp)
	}

	var payload struct {
		Type      string          `json:"type"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &payload); err != nil || payload.Type == "" {
		return nil, fmt.Errorf("client: the signed body is not a webhook event: %w", errOr(err, "no type"))
	}
	return &WebhookEvent{ID: id, Type: payload.Type, Timestamp: payload.Timestamp, Data: payload.Data}, nil
}

// WebhookMAC is the Standard Webhooks v1 signature of one message, before
// its base64: the HMAC-SHA256, under key, of "msgID.timestamp.body", the
// timestamp as webhook-timestamp carries it (Unix seconds). certorder signs
// with it (webhook.Sign) and VerifyWebhook checks with it.
func WebhookMAC(key []byte, msgID, timestamp string, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}

// webhookKey reads a signing secret: whsec_ and base64, padded or not (a
// secret pasted without its prefix is accepted too). Errors never quote it.
func webhookKey(secret string) ([]byte, error) {
	b64 := strings.TrimPrefix(strings.TrimSpace(secret), "whsec_")
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	if err != nil || len(key) == 0 {
		return nil, errors.New("client: the webhook secret is not whsec_ followed by base64")
	}
	return key, nil
}

func errOr(err error, text string) error {
	if err != nil {
		return err
	}
	return errors.New(text)
}
