package postgres

import (
	"context"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// EndingOrders lists orders whose certificate or plan ends in a window, of
// members with an endpoint for the event.
func (s *Store) EndingOrders(ctx context.Context, typ, from, to string) ([]storekit.EndingOrder, error) {
	col, err := storekit.EndColumn(typ)
	if err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+storekit.EndingColumns+`, COALESCE((SELECT string_agg(threshold::text, ',') FROM order_notices n
			WHERE n.order_id = o.id AND n.type = $1 AND n.ends = o.`+col+`), '')
		FROM orders o`+storekit.LifecycleJoin+` WHERE o.`+col+` BETWEEN $2 AND $3
		AND (EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.member_id = o.member_id AND e.enabled
			AND (e.event_types = '' OR $1 = ANY(string_to_array(e.event_types, ','))))
		OR EXISTS (SELECT 1 FROM notice_addresses a WHERE a.member_id = o.member_id
			AND a.confirmed_at IS NOT NULL AND a.unsubscribed_at IS NULL
			AND (a.event_types = '' OR $1 = ANY(string_to_array(a.event_types, ',')))))
		ORDER BY o.id`, typ, from, to)
	os, err := storekit.Collect(rows, storekit.ScanEnding)
	return os, s.wrap("ending orders", err)
}

// AddEvents writes events to the outbox in the import's or the sync's
// transaction (storekit.EventWriter).
func (t *orderTx) AddEvents(ctx context.Context, events []certorder.Event) error {
	return addEvents(ctx, pgDB{t.tx}, events)
}

// addEvents writes events to the outbox in one statement, in their order;
// none is no statement.
func addEvents(ctx context.Context, tx storekit.DB, events []certorder.Event) error {
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
