package postgres

import (
	"context"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// What takes the order events for the queue (storekit.Kit.TakeEvents,
// NoticeTargets): instances share the work, FOR UPDATE SKIP LOCKED giving
// each event to one of them.

// outboxEvents takes up to limit events whose flag (fanned_out: the
// webhooks'; noticed: the notices') is not set, oldest first; SKIP LOCKED
// leaves those another instance took to it.
func outboxEvents(ctx context.Context, tx storekit.DB, flag string, limit int) ([]certorder.Event, error) {
	return storekit.Query(ctx, tx, func(row storekit.Row) (certorder.Event, error) { return storekit.ScanEvent(row) },
		`SELECT id, member_id, type, data, at FROM webhook_events WHERE NOT `+flag+` ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`, limit)
}

// noticeTargets are the active addresses of the event's member that want
// it, locked (FOR UPDATE): instances queueing for one address take turns,
// so that its day's count holds.
func noticeTargets(ctx context.Context, tx storekit.DB, ev certorder.Event) ([]certorder.NoticeAddress, error) {
	return storekit.Query(ctx, tx, func(row storekit.Row) (certorder.NoticeAddress, error) {
		var a certorder.NoticeAddress
		return a, row.Scan(&a.ID, &a.MemberID)
	}, `SELECT id, member_id FROM notice_addresses WHERE member_id = ?
		AND confirmed_at IS NOT NULL AND unsubscribed_at IS NULL
		AND (event_types = '' OR ? = ANY(string_to_array(event_types, ','))) ORDER BY id FOR UPDATE`, ev.MemberID, ev.Type)
}
