package sqlite

import (
	"context"
	"database/sql"

	"github.com/certorder/certorder/internal/storekit"
)

var _ storekit.CertCentralWebhookStore = (*Store)(nil)

// CertCentralWebhook reads what is kept of CertCentral's webhook.
func (s *Store) CertCentralWebhook(ctx context.Context) (storekit.CertCentralWebhook, error) {
	var w storekit.CertCentralWebhook
	var last, challenge sql.NullString
	err := s.read.QueryRowContext(ctx, `SELECT last_event, last_order_id, last_event_at, challenge_token, challenge_webhook_id, challenge_at
		FROM certcentral_webhook WHERE id = 1`).Scan(&w.LastEvent, &w.LastOrderID, &last, &w.ChallengeToken, &w.ChallengeWebhookID, &challenge)
	w.LastEventAt, w.ChallengeAt = parseTime(last), parseTime(challenge)
	return w, s.wrap("read the CertCentral webhook", err)
}
