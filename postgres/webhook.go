package postgres

import (
	"context"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/jackc/pgx/v5/pgconn"
)

// AddEvents writes events to the outbox in the import's or the sync's
// transaction (storekit.EventWriter).
func (t *orderTx) AddEvents(ctx context.Context, events []certorder.Event) error {
	return addEvents(ctx, t.tx, events)
}

// addEvents writes events to the outbox in one statement, in their order;
// none is no statement.
func addEvents(ctx context.Context, tx interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, events []certorder.Event) error {
	if len(events) == 0 {
		return nil
	}
	n := len(events)
	members, types, data, at := make([]int64, n), make([]string, n), make([]string, n), make([]time.Time, n)
	for i, e := range events {
		members[i], types[i], data[i], at[i] = e.MemberID, e.Type, string(e.Data), e.At
	}
	_, err := tx.Exec(ctx, `INSERT INTO webhook_events (member_id, type, data, at)
		SELECT m, t, d, a FROM unnest($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TIMESTAMPTZ[]) WITH ORDINALITY AS e(m, t, d, a, i)
		ORDER BY i`, members, types, data, at)
	return err
}

// writeEvents is addEvents in a transaction the Kit holds
// (storekit.Kit.WriteEvents), one of this store's.
func writeEvents(ctx context.Context, tx storekit.DB, events []certorder.Event) error {
	return addEvents(ctx, tx.(pgDB).q, events)
}

// endpointTargets are the enabled endpoints of the event's member that
// want it (storekit.Kit.EndpointTargets).
func endpointTargets(ctx context.Context, tx storekit.DB, ev certorder.Event) ([]certorder.Endpoint, error) {
	return storekit.Query(ctx, tx, func(row storekit.Row) (certorder.Endpoint, error) {
		var ep certorder.Endpoint
		return ep, row.Scan(&ep.ID, &ep.MemberID, &ep.Format)
	}, `SELECT id, member_id, format FROM webhook_endpoints WHERE member_id = ? AND enabled
		AND (event_types = '' OR ? = ANY(string_to_array(event_types, ',')))
		AND NOT (SELECT disabled FROM members WHERE id = ?)`, ev.MemberID, ev.Type, ev.MemberID)
}

// The member's own calls: every statement names the member, so another
// member's endpoint or delivery matches no row.
