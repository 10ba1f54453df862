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
		mid, err := memberID(ctx, tx, member)
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
		name, err := memberWithin(ctx, tx, "webhook_endpoints", memberID, max)
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
	mid, err := memberID(ctx, s.pool, member)
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1`, id)
	return s.wrap("delete endpoint", oneRow(tag, err, fmt.Sprintf("endpoint %d", id)))
}

const deliveryColumns = `d.id, d.endpoint_id, d.event_type, d.msg_id, d.body, d.state, d.attempts, d.next_attempt,
	d.created_at, d.last_attempt, d.last_status, d.last_class, d.last_latency_us, d.last_error`

func scanDelivery(row pgx.Row, more ...any) (certorder.Delivery, error) {
	var d certorder.Delivery
	var last *time.Time
	var latency int64
	err := row.Scan(append([]any{&d.ID, &d.EndpointID, &d.EventType, &d.MsgID, &d.Body, &d.State, &d.Attempts,
		&d.NextAttempt, &d.CreatedAt, &last, &d.LastStatus, &d.LastClass, &latency, &d.LastError}, more...)...)
	d.LastAttempt, d.LastLatency = deref(last), time.Duration(latency)*time.Microsecond
	return d, err
}

const insertDelivery = `INSERT INTO webhook_deliveries (endpoint_id, event_type, msg_id, body, state, next_attempt, created_at)
	VALUES ($1, $2, $3, $4, 'pending', now(), now())`

// FanOut queues the deliveries of events not yet fanned out. FOR UPDATE
// SKIP LOCKED lets instances share the work without taking one event twice.
func (s *Store) FanOut(ctx context.Context, limit int, build func(certorder.Event, string) (string, []byte, error)) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		events, err := outboxEvents(ctx, tx, "fanned_out", limit)
		if err != nil {
			return err
		}
		for _, ev := range events {
			// A disabled member's events are posted to no one (docs/OPERATIONS.md).
			rows, _ := tx.Query(ctx, `SELECT id, format FROM webhook_endpoints WHERE member_id = $1 AND enabled
				AND (event_types = '' OR $2 = ANY(string_to_array(event_types, ',')))
				AND NOT (SELECT disabled FROM members WHERE id = $1)`, ev.MemberID, ev.Type)
			targets, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
				ID     int64
				Format string
			}])
			if err != nil {
				return err
			}
			for _, ep := range targets {
				msgID, body, err := build(ev, ep.Format)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, insertDelivery, ep.ID, ev.Type, msgID, body); err != nil {
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

// ClaimDeliveries takes due deliveries with their endpoints, for lease;
// SKIP LOCKED keeps two instances from taking the same one, and the
// condition repeated on d makes a row another instance claimed meanwhile
// (committed: no longer due) one this statement skips.
func (s *Store) ClaimDeliveries(ctx context.Context, c certorder.Claim) ([]certorder.Delivery, error) {
	perMember := int64(0)
	if c.RoundRobin {
		perMember = 1
	}
	skipE, skipM, served := c.SkipEndpoints, c.SkipMembers, c.Served
	if skipE == nil {
		skipE = []int64{}
	}
	if skipM == nil {
		skipM = []int64{}
	}
	if served == nil {
		served = []int64{}
	}
	// heads: the oldest due deliveries of each endpoint (an index probe
	// each, whatever the backlog; round-robin needs only each one's first:
	// 0.3 ms a claim with 200,000 due, against 57 ms taking 32 of each);
	// ranked: numbered within each member; served: the member's place in
	// c.Served (0: not listed, first).
	perEndpoint := "$3"
	if c.RoundRobin {
		perEndpoint = "1"
	}
	rows, _ := s.pool.Query(ctx, `WITH heads AS (
			SELECT e.member_id, x.id, x.next_attempt, COALESCE(array_position($7::bigint[], e.member_id), 0) AS served
			FROM webhook_endpoints e
			CROSS JOIN LATERAL (SELECT d.id, d.next_attempt FROM webhook_deliveries d
				WHERE d.endpoint_id = e.id AND d.state = 'pending' AND d.next_attempt <= $1
				ORDER BY d.next_attempt, d.id LIMIT `+perEndpoint+`) x
			WHERE e.id <> ALL($5::bigint[]) AND e.member_id <> ALL($6::bigint[])),
		ranked AS (
			SELECT id, next_attempt, served, row_number() OVER (PARTITION BY member_id ORDER BY next_attempt, id) AS rn FROM heads),
		pick AS (
			SELECT d.id FROM webhook_deliveries d JOIN ranked ON ranked.id = d.id
			WHERE d.state = 'pending' AND d.next_attempt <= $1 AND ($4 = 0 OR ranked.rn <= $4)
			ORDER BY ranked.rn, ranked.served, ranked.next_attempt, ranked.id LIMIT $3 FOR UPDATE OF d SKIP LOCKED)
		UPDATE webhook_deliveries d SET next_attempt = $2 FROM pick, webhook_endpoints e
		WHERE d.id = pick.id AND e.id = d.endpoint_id
		RETURNING `+deliveryColumns+`, e.url, e.secret, e.previous_secret, e.previous_expires, e.event_types, e.member_id, e.enabled, e.failing_since`,
		c.At, c.At.Add(c.Lease), c.Limit, perMember, skipE, skipM, served)
	ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Delivery, error) {
		var ep certorder.Endpoint
		var types string
		var prevExpires, failing *time.Time
		d, err := scanDelivery(row, &ep.URL, &ep.Secret, &ep.PreviousSecret, &prevExpires, &types, &ep.MemberID, &ep.Enabled, &failing)
		ep.ID, ep.PreviousExpires, ep.FailingSince = d.EndpointID, deref(prevExpires), deref(failing)
		if types != "" {
			ep.EventTypes = strings.Split(types, ",")
		}
		d.Endpoint = &ep
		return d, err
	})
	return ds, s.wrap("claim deliveries", err)
}

// FinishAttempt records an attempt's outcome, and its endpoint's.
func (s *Store) FinishAttempt(ctx context.Context, a certorder.Attempt) error {
	return s.wrap("finish attempt", s.inTx(ctx, func(tx pgx.Tx) error {
		next := a.NextAttempt
		if next.IsZero() {
			next = a.At
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = $1, attempts = attempts + 1, next_attempt = $2,
			last_attempt = $3, last_status = $4, last_class = $5, last_latency_us = $6, last_error = $7 WHERE id = $8`,
			a.State, next, a.At, a.Status, a.Class, a.Latency.Microseconds(), a.Error, a.DeliveryID); err != nil {
			return err
		}
		var err error
		switch {
		case a.Success:
			_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET last_success = $1, failing_since = NULL WHERE id = $2`, a.At, a.EndpointID)
		case a.Disable != "":
			_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $1 WHERE id = $2`, a.Disable, a.EndpointID)
		default:
			_, err = tx.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $1) WHERE id = $2`, a.At, a.EndpointID)
		}
		return err
	}))
}

// EndingOrders lists orders whose certificate or plan ends in a window, of
// members with an endpoint for the event.
func (s *Store) EndingOrders(ctx context.Context, typ, from, to string) ([]certorder.EndingOrder, error) {
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
func (s *Store) RecordEnding(ctx context.Context, typ string, o certorder.EndingOrder, thresholds []int, data []byte, at time.Time) (bool, error) {
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
// transaction (certorder.EventWriter).
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

// PruneWebhooks deletes old events and finished deliveries.
func (s *Store) PruneWebhooks(ctx context.Context, before time.Time) error {
	return s.wrap("prune webhooks", s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM webhook_events WHERE fanned_out AND at < $1`, before); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND created_at < $1`, before)
		return err
	}))
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND member_id = $2`, id, memberID)
	return s.wrap("delete endpoint", oneRow(tag, err, fmt.Sprintf("endpoint %d", id)))
}

// MemberDeliveries lists the latest deliveries of one of the member's endpoints.
func (s *Store) MemberDeliveries(ctx context.Context, memberID, endpointID int64, limit int) ([]certorder.Delivery, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d
		JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.endpoint_id = $1 AND e.member_id = $2 ORDER BY d.id DESC LIMIT $3`, endpointID, memberID, limit)
	ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Delivery, error) { return scanDelivery(row) })
	return ds, s.wrap("list deliveries", err)
}

// QueueMemberDelivery queues a message to one of the member's endpoints.
func (s *Store) QueueMemberDelivery(ctx context.Context, memberID, endpointID int64, eventType, msgID string, body []byte) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO webhook_deliveries (endpoint_id, event_type, msg_id, body, state, next_attempt, created_at)
		SELECT id, $3, $4, $5, 'pending', now(), now() FROM webhook_endpoints WHERE id = $1 AND member_id = $2
		RETURNING id`, endpointID, memberID, eventType, msgID, body).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("%w: endpoint %d", certorder.ErrNotFound, endpointID)
	}
	return id, s.wrap("queue delivery", err)
}

// RedeliverMemberDelivery queues a finished delivery of one of the
// member's endpoints again at once.
func (s *Store) RedeliverMemberDelivery(ctx context.Context, memberID, endpointID, deliveryID int64) error {
	return s.wrap("redeliver", s.inTx(ctx, func(tx pgx.Tx) error {
		var state string
		err := tx.QueryRow(ctx, `SELECT d.state FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.id = $1 AND d.endpoint_id = $2 AND e.member_id = $3 FOR UPDATE OF d`, deliveryID, endpointID, memberID).Scan(&state)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: delivery %d", certorder.ErrNotFound, deliveryID)
		case err != nil:
			return err
		case state == certorder.DeliveryPending:
			return fmt.Errorf("%w: delivery %d is pending already", certorder.ErrConflict, deliveryID)
		}
		_, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt = now()
			WHERE id = $1`, deliveryID)
		return err
	}))
}
