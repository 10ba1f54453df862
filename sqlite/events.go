package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// The order events: whom an event goes to (storekit.Kit.NoticeTargets,
// EndpointTargets: the wish read in Go) and their write in a transaction
// (WriteEvents, the import's multi-row insert). SQLite has one writer, and
// its transactions begin IMMEDIATE, so each transaction alone keeps two
// workers from taking one event (storekit.Kit.SkipLocked is "").

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

// addEvents writes events to the outbox, a multi-row insert per
// eventBatchRows of them; none is no statement.
func addEvents(ctx context.Context, tx *sql.Tx, events []certorder.Event) error {
	for chunk := range slices.Chunk(events, eventBatchRows) {
		args := make([]any, 0, 4*len(chunk))
		for _, e := range chunk {
			args = append(args, e.MemberID, e.Type, string(e.Data), formatTime(e.At))
		}
		if _, err := tx.ExecContext(ctx, multiRow(insertEvent, len(chunk)), args...); err != nil {
			return err
		}
	}
	return nil
}

// endpointTargets are the enabled endpoints of the event's member that
// want it (storekit.Kit.EndpointTargets), the wish read here.
func endpointTargets(ctx context.Context, tx storekit.DB, ev certorder.Event) ([]certorder.Endpoint, error) {
	targets, err := storekit.Query(ctx, tx, func(row storekit.Row) (certorder.Endpoint, error) {
		var ep certorder.Endpoint
		var types string
		err := row.Scan(&ep.ID, &ep.MemberID, &ep.Format, &types)
		ep.EventTypes = storekit.EventTypes(types)
		return ep, err
	}, `SELECT id, member_id, format, event_types FROM webhook_endpoints
		WHERE member_id = ?1 AND enabled AND NOT (SELECT disabled FROM members WHERE id = ?1)`, ev.MemberID)
	return slices.DeleteFunc(targets, func(ep certorder.Endpoint) bool {
		return len(ep.EventTypes) > 0 && !slices.Contains(ep.EventTypes, ev.Type)
	}), err
}

const insertEvent = `INSERT INTO webhook_events (member_id, type, data, at) VALUES (?, ?, ?, ?)`

// writeEvents is addEvents in a transaction the Kit holds
// (storekit.Kit.WriteEvents), one of this store's.
func writeEvents(ctx context.Context, tx storekit.DB, events []certorder.Event) error {
	return addEvents(ctx, tx.(sqlDB).q.(*sql.Tx), events)
}

// eventBatchRows bounds addEvents' statements (4 variables a row).
const eventBatchRows = 500

// int64List is ids as a JSON array, for json_each.
func int64List(ids []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	return b.String()
}
