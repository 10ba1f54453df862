package digicert

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
)

// CertCentral's webhook: one per account, which CertCentral calls with
// the account's events (the Services API's "Webhooks" pages: Create
// webhook, Update webhook, List webhooks, Send test event, Send challenge
// token, Verify challenge token, Deactivate webhook, Webhook event logs;
// the event bodies are on "CertCentral event types").

// The webhook's statuses ("List webhooks").
const (
	WebhookPending  = "pending"
	WebhookActive   = "active"
	WebhookInactive = "inactive"
)

// The events CertCentral sends ("CertCentral event types"; the first two
// only to make a webhook active).
const (
	EventTest               = "test_webhook_endpoint"
	EventChallenge          = "challenge_webhook_endpoint"
	EventCertificateIssued  = "certificate_issued"
	EventCertificateRevoked = "certificate_revoked"
	EventOrderRejected      = "order_rejected"
)

// OrderEvents are the events about an order's certificate: a sync
// applies them (certorder subscribes to these).
var OrderEvents = []string{EventCertificateIssued, EventCertificateRevoked, EventOrderRejected}

// MinWebhookSecret is the shortest secret CertCentral takes ("Create
// webhook": at least 32 characters).
const MinWebhookSecret = 32

// Webhook is the account's webhook as List webhooks gives it. Secret is
// never printed by certorder.
type Webhook struct {
	ID       int64           `json:"id"`
	Endpoint string          `json:"endpoint"`
	Secret   string          `json:"secret,omitempty"`
	Events   []string        `json:"events"`
	Status   string          `json:"status"`
	Settings WebhookSettings `json:"webhook_settings"`
}

// String names the webhook without its secret.
func (w Webhook) String() string {
	return fmt.Sprintf("webhook %d (%s, %s)", w.ID, w.Endpoint, w.Status)
}

// GoString is String, so that %#v does not print the secret.
func (w Webhook) GoString() string { return w.String() }

// WebhookSettings are the settings certorder uses; CertCentral has more
// (webhook_notification_frequency, the certificate chains).
type WebhookSettings struct {
	// InstantIssue "1": certificate_issued is sent for certificates issued
	// the instant their order is created too, not only for the others.
	InstantIssue string `json:"instant_issue_webhook_notification,omitempty"`
}

// WebhookConfig is what Create webhook and Update webhook send.
type WebhookConfig struct {
	Endpoint string          `json:"endpoint"`
	Secret   string          `json:"secret,omitempty"`
	Events   []string        `json:"events,omitempty"`
	Settings WebhookSettings `json:"webhook_settings"`
}

// String names the configuration without its secret.
func (c WebhookConfig) String() string { return "webhook configuration for " + c.Endpoint }

// GoString is String.
func (c WebhookConfig) GoString() string { return c.String() }

// ErrNoWebhook is matched (errors.Is) by Webhook's error when the account
// has none (400 webhook_invalid_account).
var ErrNoWebhook = errors.New("digicert: the account has no webhook")

// ErrWebhookExists is matched by CreateWebhook's error when the account has
// one already (400 webhook_configured_already).
var ErrWebhookExists = errors.New("digicert: the account has a webhook already")

// hasCode reports whether err is an APIError with the code.
func hasCode(err error, code string) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && slices.Contains(apiErr.Codes, code)
}

// Webhook returns the account's webhook (GET webhook, "List webhooks");
// ErrNoWebhook when there is none.
func (c *Client) Webhook(ctx context.Context) (Webhook, error) {
	var list struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	err := c.get(ctx, "list webhooks", "webhook", nil, &list)
	switch {
	case hasCode(err, "webhook_invalid_account"):
		return Webhook{}, fmt.Errorf("%w: %w", ErrNoWebhook, err)
	case err != nil:
		return Webhook{}, err
	case len(list.Webhooks) == 0:
		return Webhook{}, ErrNoWebhook
	}
	return list.Webhooks[0], nil
}

// CreateWebhook creates the account's webhook (POST webhook, "Create
// webhook") and returns its ID; ErrWebhookExists when there is one.
func (c *Client) CreateWebhook(ctx context.Context, cfg WebhookConfig) (int64, error) {
	var created struct {
		ID int64 `json:"webhook_id"`
	}
	err := c.call(ctx, "POST", "create webhook", "webhook", nil, cfg, &created)
	if hasCode(err, "webhook_configured_already") {
		return 0, fmt.Errorf("%w: %w", ErrWebhookExists, err)
	}
	if err == nil && created.ID <= 0 {
		err = errors.New("digicert: create webhook: the answer has no webhook_id")
	}
	return created.ID, err
}

// UpdateWebhook changes the webhook (PUT webhook/{id}, "Update webhook");
// a new endpoint must be verified again before it gets events.
func (c *Client) UpdateWebhook(ctx context.Context, id int64, cfg WebhookConfig) error {
	return c.call(ctx, "PUT", "update webhook", "webhook/"+itoa(id), nil, cfg, nil)
}

// TestWebhookEndpoint has CertCentral send its test event to endpoint,
// with the secret in X-WEBHOOK-KEY when it is not empty (POST
// webhook/test-endpoint, "Send test event"). An error with the code
// webhook_endpoint_error says the endpoint did not answer 2xx.
func (c *Client) TestWebhookEndpoint(ctx context.Context, endpoint, secret string) error {
	body := struct {
		Endpoint string `json:"endpoint"`
		Secret   string `json:"secret,omitempty"`
	}{endpoint, secret}
	return c.call(ctx, "POST", "send test event", "webhook/test-endpoint", nil, body, nil)
}

// SendWebhookChallenge has CertCentral send a challenge token to the
// webhook's endpoint (PUT webhook/{id}/send-challenge, "Send challenge
// token"); the token is valid for 30 minutes.
func (c *Client) SendWebhookChallenge(ctx context.Context, id int64) error {
	return c.call(ctx, "PUT", "send challenge token", "webhook/"+itoa(id)+"/send-challenge", nil, nil, nil)
}

// CheckWebhookChallenge sends back the token the endpoint received (PUT
// webhook/{id}/check-challenge, "Verify challenge token"), which completes
// the endpoint's verification.
func (c *Client) CheckWebhookChallenge(ctx context.Context, id int64, token string) error {
	body := struct {
		Token string `json:"token"`
	}{token}
	return c.call(ctx, "PUT", "verify challenge token", "webhook/"+itoa(id)+"/check-challenge", nil, body, nil)
}

// ActivateWebhook activates a verified webhook (PUT webhook/{id}/activate,
// the counterpart of "Deactivate webhook").
func (c *Client) ActivateWebhook(ctx context.Context, id int64) error {
	return c.call(ctx, "PUT", "activate webhook", "webhook/"+itoa(id)+"/activate", nil, nil, nil)
}

// WebhookDelivery is one entry of the webhook's event log: an event
// CertCentral sent and how the endpoint answered.
type WebhookDelivery struct {
	Event string `json:"event_name"`
	Info  struct {
		OrderID       int64 `json:"order_id"`
		CertificateID int64 `json:"certificate_id"`
	} `json:"event_info"`
	Status       string `json:"request_status"`
	Sent         string `json:"request_sent_time"`      // UTC, ISO 8601
	Answered     string `json:"response_received_time"` // UTC, ISO 8601
	ResponseCode int    `json:"response_code"`
}

// maxDeliveries is the most entries WebhookEvents reads: a page.
const maxDeliveries = 1000

// WebhookEvents returns the webhook's event log, the most recent last, up
// to limit entries (GET webhook/event-logs, "Webhook event logs": a page
// of at most 1000, read from the end).
func (c *Client) WebhookEvents(ctx context.Context, limit int) ([]WebhookDelivery, error) {
	limit = min(max(limit, 1), maxDeliveries)
	var page struct {
		Events []WebhookDelivery `json:"events"`
		Page   Page              `json:"page"`
	}
	query := func(offset int) url.Values {
		return url.Values{"offset": {strconv.Itoa(offset)}, "limit": {strconv.Itoa(limit)}}
	}
	if err := c.get(ctx, "webhook event logs", "webhook/event-logs", query(0), &page); err != nil {
		return nil, err
	}
	if page.Page.Total > len(page.Events) {
		// The newest are on the last page.
		if err := c.get(ctx, "webhook event logs", "webhook/event-logs", query(max(0, page.Page.Total-limit)), &page); err != nil {
			return nil, err
		}
	}
	if len(page.Events) > limit {
		return nil, fmt.Errorf("digicert: webhook event logs: %w: %d entries, over the %d asked", ErrTooLarge, len(page.Events), limit)
	}
	return page.Events, nil
}
