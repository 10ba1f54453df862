package postgres_test

import (
	"context"
	"testing"

	"github.com/certorder/certorder/postgres"
	"github.com/certorder/certorder/storetest"
)

// What was queued before the one queue (migration 0016) is carried over.
func TestUpgradeToJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, exec, closeDB := schemaBefore(t, 16)
	at, due := "2026-11-01T10:00:00Z", storetest.QueuedDigestAt
	exec(`INSERT INTO members (id, name, created_at) VALUES (1, 'alice', $1)`, at)
	exec(`INSERT INTO webhook_endpoints (id, member_id, url, secret, created_at) VALUES (1, 1, 'https://a.example/hook', 'whsec_a', $1)`, at)
	exec(`INSERT INTO webhook_deliveries (id, endpoint_id, event_type, msg_id, body, state, attempts, next_attempt, created_at,
		last_attempt, last_status, last_class, last_latency_us) VALUES
		(1, 1, 'order.renewed', 'msg_1', '\x7b7d', 'delivered', 1, $1, $1, $1, 200, 'delivered', 900),
		(2, 1, 'order.renewed', 'msg_2', $3, 'pending', 2, $2, $1, $1, 503, 'http_status', 1500)`, at, due, []byte(storetest.QueuedBody))
	exec(`INSERT INTO notice_addresses (id, member_id, address, lang, secret, created_at, confirmed_at)
		VALUES (1, 1, 'ops@a.example', 'en', 'c2VjcmV0', $1, $1)`, at)
	exec(`INSERT INTO notice_messages (id, address_id, kind, day, state, attempts, next_attempt, created_at) VALUES
		(1, 1, 'event', '2026-11-01', 'delivered', 1, $1, $1), (2, 1, 'digest', '2026-11-01', 'pending', 0, $2, $1)`, at, due)
	exec(`INSERT INTO notice_events (message_id, type, data, at) VALUES (1, 'order.renewed', '{}', $1),
		(2, 'order.status_changed', '{}', $1), (2, 'order.renewed', '{}', $1)`, at)
	for _, seq := range []string{"members_id_seq", "webhook_endpoints_id_seq", "webhook_deliveries_id_seq", "notice_addresses_id_seq",
		"notice_messages_id_seq"} {
		exec(`SELECT setval('` + seq + `', 2)`)
	}
	closeDB()

	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.QueueUpgraded(t, s)
}
