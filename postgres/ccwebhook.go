package postgres

import (
	"context"
	"time"

	"github.com/certorder/certorder/internal/storekit"
)

var _ storekit.CertCentralWebhookStore = (*Store)(nil)

// RecordCertCentralEvent makes ev the last event received.
func (s *Store) RecordCertCentralEvent(ctx context.Context, ev storekit.CertCentralEvent) error {
	_, err := s.pool.Exec(ctx, `UPDATE certcentral_webhook SET last_event = $1, last_order_id = $2, last_event_at = $3,
		challenge_token = CASE WHEN $4 = '' THEN challenge_token ELSE $4 END,
		challenge_webhook_id = CASE WHEN $4 = '' THEN challenge_webhook_id ELSE $5 END,
		challenge_at = CASE WHEN $4 = '' THEN challenge_at ELSE $3 END
		WHERE id = 1`, ev.Event, ev.OrderID, ev.At, ev.Token, ev.WebhookID)
	return s.wrap("record a CertCentral event", err)
}

// CertCentralWebhook reads what is kept of CertCentral's webhook.
func (s *Store) CertCentralWebhook(ctx context.Context) (storekit.CertCentralWebhook, error) {
	var w storekit.CertCentralWebhook
	var last, challenge *time.Time
	err := s.pool.QueryRow(ctx, `SELECT last_event, last_order_id, last_event_at, challenge_token, challenge_webhook_id, challenge_at
		FROM certcentral_webhook WHERE id = 1`).Scan(&w.LastEvent, &w.LastOrderID, &last, &w.ChallengeToken, &w.ChallengeWebhookID, &challenge)
	w.LastEventAt, w.ChallengeAt = deref(last), deref(challenge)
	return w, s.wrap("read the CertCentral webhook", err)
}
