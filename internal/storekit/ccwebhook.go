package storekit

import (
	"context"
	"time"

	"github.com/certorder/certorder/queue"
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
	// RecordCertCentralEvent makes ev the last event (one with a Token
	// replaces the challenge kept) and queues jobs, in one transaction.
	RecordCertCentralEvent(ctx context.Context, ev CertCentralEvent, jobs ...queue.Job) error
	// CertCentralWebhook reads what is kept.
	CertCentralWebhook(ctx context.Context) (CertCentralWebhook, error)
}

// RecordCertCentralEvent makes ev the last event received (one with a
// Token replaces the challenge kept) and queues jobs (the event's, for its
// order) in the same transaction: the receiver writes once an event, and
// a failure leaves neither (before, the job stayed queued behind a 503).
// A burst of copies waits behind SQLite's one writer half as long as with
// two writes an event; at twice the load the cores can take, 49 at once
// still outlast the store's timeout (issue 41's closing note).
func (k *Kit) RecordCertCentralEvent(ctx context.Context, ev CertCentralEvent, jobs ...queue.Job) error {
	err := k.Write.InTx(ctx, func(tx DB) error {
		at := time.Now() // the jobs' creation, one time a transaction as Enqueue's
		for _, j := range jobs {
			if _, err := InsertJob(ctx, tx, j, at); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE certcentral_webhook SET last_event = ?, last_order_id = ?, last_event_at = ?,
			challenge_token = CASE WHEN ? = '' THEN challenge_token ELSE ? END,
			challenge_webhook_id = CASE WHEN ? = '' THEN challenge_webhook_id ELSE ? END,
			challenge_at = CASE WHEN ? = '' THEN challenge_at ELSE ? END
			WHERE id = 1`, ev.Event, ev.OrderID, ev.At, ev.Token, ev.Token, ev.Token, ev.WebhookID, ev.Token, ev.At)
		return err
	})
	return k.Wrap("record a CertCentral event", err)
}
