package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// The order events: whom an event goes to (storekit.Kit.NoticeTargets,
// EndpointTargets: the wish tested, and the addresses locked, in SQL) and
// their write in a transaction (WriteEvents, one unnest). Instances share
// the work: the Kit takes the events FOR UPDATE SKIP LOCKED (SkipLocked),
// giving each event to one of them.

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

// addEvents writes events to the outbox in one statement, in their order;
// none is no statement.
func addEvents(ctx context.Context, tx pgx.Tx, events []certorder.Event) error {
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
	return addEvents(ctx, tx.(pgDB).q.(pgx.Tx), events)
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
