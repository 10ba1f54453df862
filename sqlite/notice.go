package sqlite

import (
	"context"
	"slices"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// What takes the order events for the queue (storekit.Kit.TakeEvents,
// NoticeTargets): SQLite has one writer, and its transactions begin
// IMMEDIATE, so each transaction alone keeps two workers from taking one
// event.

// outboxEvents are up to limit events whose flag (fanned_out: the
// webhooks'; noticed: the notices') is not set, oldest first.
func outboxEvents(ctx context.Context, tx storekit.DB, flag string, limit int) ([]certorder.Event, error) {
	return storekit.Query(ctx, tx, func(row storekit.Row) (certorder.Event, error) { return storekit.ScanEvent(row) },
		`SELECT id, member_id, type, data, at FROM webhook_events WHERE `+flag+` = 0 ORDER BY id LIMIT ?`, limit)
}

// noticeTargets are the active addresses of the event's member that want
// it, the wish read here.
func noticeTargets(ctx context.Context, tx storekit.DB, ev certorder.Event) ([]certorder.NoticeAddress, error) {
	addrs, err := storekit.Query(ctx, tx, func(row storekit.Row) (certorder.NoticeAddress, error) {
		var a certorder.NoticeAddress
		var types string
		err := row.Scan(&a.ID, &a.MemberID, &types)
		a.EventTypes = storekit.EventTypes(types)
		return a, err
	}, `SELECT id, member_id, event_types FROM notice_addresses WHERE member_id = ?
		AND confirmed_at IS NOT NULL AND unsubscribed_at IS NULL`, ev.MemberID)
	return slices.DeleteFunc(addrs, func(a certorder.NoticeAddress) bool { return !a.Wants(ev.Type) }), err
}

// nullTime is t as stored, NULL when zero.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}
