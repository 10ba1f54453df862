package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
)

const endpointColumns = `e.id, e.member_id, m.name, e.url, e.format, e.event_types, e.secret, e.previous_secret,
	e.previous_expires, e.enabled, e.disabled_reason, e.created_at, e.last_success, e.failing_since`

func scanEndpoint(row pgx.Row) (certorder.Endpoint, error) {
	var e certorder.Endpoint
	var types string
	var prevExpires, success, failing *time.Time
	err := row.Scan(&e.ID, &e.MemberID, &e.Member, &e.URL, &e.Format, &types, &e.Secret, &e.PreviousSecret,
		&prevExpires, &e.Enabled, &e.DisabledReason, &e.CreatedAt, &success, &failing)
	if types != "" {
		e.EventTypes = strings.Split(types, ",")
	}
	e.PreviousExpires, e.LastSuccess, e.FailingSince = deref(prevExpires), deref(success), deref(failing)
	return e, err
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// AddEndpoint stores a new endpoint of a member.
func (s *Store) AddEndpoint(ctx context.Context, member string, e certorder.Endpoint) (certorder.Endpoint, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		mid, err := storekit.MemberID(ctx, pgDB{tx}, member)
		if err != nil {
			return err
		}
		e.MemberID, e.Member = mid, member
		return insertEndpoint(ctx, tx, &e)
	})
	return e, s.wrap("add endpoint", err)
}

// insertEndpoint stores e, of e.MemberID, as a new enabled endpoint, and
// fills in its ID and creation time.
func insertEndpoint(ctx context.Context, tx pgx.Tx, e *certorder.Endpoint) error {
	e.Enabled, e.Format = true, certorder.EndpointFormat(e.Format)
	return tx.QueryRow(ctx, `INSERT INTO webhook_endpoints (member_id, url, format, event_types, secret, enabled, created_at)
		VALUES ($1, $2, $3, $4, $5, true, now()) RETURNING id, created_at`,
		e.MemberID, e.URL, e.Format, strings.Join(e.EventTypes, ","), e.Secret).Scan(&e.ID, &e.CreatedAt)
}

// AddMemberEndpoint stores a new endpoint of the member, within max.
func (s *Store) AddMemberEndpoint(ctx context.Context, memberID int64, e certorder.Endpoint, max int) (certorder.Endpoint, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		name, err := s.MemberWithin(ctx, pgDB{tx}, "webhook_endpoints", memberID, max)
		if err != nil {
			return err
		}
		e.MemberID, e.Member = memberID, name
		return insertEndpoint(ctx, tx, &e)
	})
	return e, s.wrap("add endpoint", err)
}

// Endpoints lists a member's endpoints.
func (s *Store) Endpoints(ctx context.Context, member string) ([]certorder.Endpoint, error) {
	mid, err := storekit.MemberID(ctx, s.Read, member)
	if err != nil {
		return nil, s.wrap("list endpoints", err)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e
		JOIN members m ON m.id = e.member_id WHERE e.member_id = $1 ORDER BY e.id`, mid)
	es, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Endpoint, error) { return scanEndpoint(row) })
	return es, s.wrap("list endpoints", err)
}

// FindEndpoint returns one endpoint.
func (s *Store) FindEndpoint(ctx context.Context, id int64) (certorder.Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e
		JOIN members m ON m.id = e.member_id WHERE e.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("%w: endpoint %d", certorder.ErrNotFound, id)
	}
	return e, s.wrap("find endpoint", err)
}

// RotateSecret gives an endpoint a new secret; the old one stays valid until previousUntil.
func (s *Store) RotateSecret(ctx context.Context, id int64, secret string, previousUntil time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_endpoints SET previous_secret = secret, previous_expires = $1,
		secret = $2 WHERE id = $3`, previousUntil, secret, id)
	return s.wrap("rotate secret", oneRow(tag, err, fmt.Sprintf("endpoint %d", id)))
}

// DeleteEndpoint deletes an endpoint and its deliveries.
func (s *Store) DeleteEndpoint(ctx context.Context, id int64) error {
	return s.wrap("delete endpoint", s.deleteEndpoint(ctx, `id = $1`, id))
}

// deleteEndpoint deletes the endpoint where selects, args[0] its ID, and its jobs.
func (s *Store) deleteEndpoint(ctx context.Context, where string, args ...any) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE `+where, args...)
		if err := oneRow(tag, err, fmt.Sprintf("endpoint %d", args[0])); err != nil {
			return err
		}
		return s.DeleteJobs(ctx, pgDB{tx}, args[0].(int64), queue.KindWebhook)
	})
}

// FanOut queues the jobs build makes of the events not yet fanned out, one
// for each enabled endpoint of the event's member that wants it. FOR
// UPDATE SKIP LOCKED lets instances share the work without taking one
// event twice.
func (s *Store) FanOut(ctx context.Context, limit int, build func(certorder.Event, certorder.Endpoint) (queue.Job, error)) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		events, err := outboxEvents(ctx, pgDB{tx}, "fanned_out", limit)
		if err != nil {
			return err
		}
		at := time.Now()
		for _, ev := range events {
			// A disabled member's events are posted to no one (docs/OPERATIONS.md).
			rows, _ := tx.Query(ctx, `SELECT id, member_id, format FROM webhook_endpoints WHERE member_id = $1 AND enabled
				AND (event_types = '' OR $2 = ANY(string_to_array(event_types, ',')))
				AND NOT (SELECT disabled FROM members WHERE id = $1)`, ev.MemberID, ev.Type)
			targets, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Endpoint, error) {
				var ep certorder.Endpoint
				return ep, row.Scan(&ep.ID, &ep.MemberID, &ep.Format)
			})
			if err != nil {
				return err
			}
			for _, ep := range targets {
				j, err := build(ev, ep)
				if err != nil {
					return err
				}
				if _, err := storekit.InsertJob(ctx, pgDB{tx}, j, at); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `UPDATE webhook_events SET fanned_out = true WHERE id = $1`, ev.ID); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, s.wrap("fan out", err)
}

// RecordEndpointAttempt records on an endpoint how an attempt to it went.
func (s *Store) RecordEndpointAttempt(ctx context.Context, id int64, at time.Time, ok bool, disable string) error {
	var err error
	switch {
	case ok:
		_, err = s.pool.Exec(ctx, `UPDATE webhook_endpoints SET last_success = $1, failing_since = NULL WHERE id = $2`, at, id)
	case disable != "":
		_, err = s.pool.Exec(ctx, `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $1 WHERE id = $2`, disable, id)
	default:
		_, err = s.pool.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $1) WHERE id = $2`, at, id)
	}
	return s.wrap("record endpoint attempt", err)
}

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

// RecordEnding records an event of an end and its thresholds.
func (s *Store) RecordEnding(ctx context.Context, typ string, o storekit.EndingOrder, thresholds []int, data []byte, at time.Time) (bool, error) {
	recorded := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		for _, t := range thresholds {
			tag, err := tx.Exec(ctx, `INSERT INTO order_notices (order_id, type, ends, threshold) VALUES ($1, $2, $3, $4)
				ON CONFLICT DO NOTHING`, o.ID, typ, o.End(typ), t)
			if err != nil {
				return err
			}
			recorded = recorded || tag.RowsAffected() > 0
		}
		if !recorded {
			return nil
		}
		return addEvents(ctx, tx, []certorder.Event{{MemberID: o.MemberID, Type: typ, Data: data, At: at}})
	})
	return recorded, s.wrap("record "+typ, err)
}

// AddEvents writes events to the outbox in the import's or the sync's
// transaction (storekit.EventWriter).
func (t *orderTx) AddEvents(ctx context.Context, events []certorder.Event) error {
	return addEvents(ctx, t.tx, events)
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

// PruneEvents deletes the events fanned out before before.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM webhook_events WHERE fanned_out AND at < $1`, before)
	return s.wrap("prune events", err)
}

// The member's own calls: every statement names the member, so another
// member's endpoint or delivery matches no row.

// MemberEndpoint returns one of the member's endpoints.
func (s *Store) MemberEndpoint(ctx context.Context, memberID, id int64) (certorder.Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e
		JOIN members m ON m.id = e.member_id WHERE e.id = $1 AND e.member_id = $2`, id, memberID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("%w: endpoint %d", certorder.ErrNotFound, id)
	}
	return e, s.wrap("find endpoint", err)
}

// SetMemberEndpointEnabled enables or disables one of the member's endpoints.
func (s *Store) SetMemberEndpointEnabled(ctx context.Context, memberID, id int64, enabled bool, reason string) error {
	if enabled {
		reason = ""
	}
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_endpoints SET enabled = $1, disabled_reason = $2,
		failing_since = CASE WHEN $1 THEN NULL ELSE failing_since END WHERE id = $3 AND member_id = $4`, enabled, reason, id, memberID)
	return s.wrap("set endpoint", oneRow(tag, err, fmt.Sprintf("endpoint %d", id)))
}

// DeleteMemberEndpoint deletes one of the member's endpoints and its deliveries.
func (s *Store) DeleteMemberEndpoint(ctx context.Context, memberID, id int64) error {
	return s.wrap("delete endpoint", s.deleteEndpoint(ctx, `id = $1 AND member_id = $2`, id, memberID))
}
