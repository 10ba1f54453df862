package storekit

import (
	"context"
	"time"
)

// CertCentralWebhook is what a store keeps of CertCentral's webhook
// beside the queue (its order events are jobs of kind
// queue.KindCertCentralEvent): the last event the receiver accepted, and
// the last challenge token it was sent, which admin sync webhook register
// (another process, perhaps on another machine) sends back to CertCentral.
type CertCentralWebhook struct {
	LastEvent   string // "" before the first
	LastOrderID int64  // the order it named; 0: none
	LastEventAt time.Time

	ChallengeToken     string
	ChallengeWebhookID int64
	ChallengeAt        time.Time
}

// CertCentralEvent is an event the receiver accepted: its name, the order
// it names (0: none) and, for a challenge, the token and the webhook.
type CertCentralEvent struct {
	Event     string
	OrderID   int64
	At        time.Time
	Token     string
	WebhookID int64
}

// CertCentralWebhookStore keeps it.
type CertCentralWebhookStore interface {
	// RecordCertCentralEvent makes ev the last event; one with a Token
	// replaces the challenge kept.
	RecordCertCentralEvent(ctx context.Context, ev CertCentralEvent) error
	// CertCentralWebhook reads what is kept.
	CertCentralWebhook(ctx context.Context) (CertCentralWebhook, error)
}
