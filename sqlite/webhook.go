package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// AddEvents writes events to the outbox in the import's or the sync's
// transaction (storekit.EventWriter).
func (t *orderTx) AddEvents(ctx context.Context, events []certorder.Event) error {
	return addEvents(ctx, t.tx, events)
}

// addEvents writes events to the outbox, a multi-row insert per
// eventBatchRows of them; none is no statement.
func addEvents(ctx context.Context, tx interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, events []certorder.Event) error {
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
	return addEvents(ctx, tx.(sqlDB).q, events)
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
