package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

const endpointColumns = `e.id, e.member_id, m.name, e.url, e.format, e.event_types, e.secret, e.previous_secret,
	e.previous_expires, e.enabled, e.disabled_reason, e.created_at, e.last_success, e.failing_since`

func scanEndpoint(row interface{ Scan(...any) error }) (certorder.Endpoint, error) {
	var e certorder.Endpoint
	var types string
	var prevExpires, created, success, failing sql.NullString
	err := row.Scan(&e.ID, &e.MemberID, &e.Member, &e.URL, &e.Format, &types, &e.Secret, &e.PreviousSecret,
		&prevExpires, &e.Enabled, &e.DisabledReason, &created, &success, &failing)
	if types != "" {
		e.EventTypes = strings.Split(types, ",")
	}
	e.PreviousExpires, e.CreatedAt = parseTime(prevExpires), parseTime(created)
	e.LastSuccess, e.FailingSince = parseTime(success), parseTime(failing)
	return e, err
}

// AddEndpoint stores a new endpoint of a member.
func (s *Store) AddEndpoint(ctx context.Context, member string, e certorder.Endpoint) (certorder.Endpoint, error) {
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		mid, err := memberID(ctx, tx, member)
		if err != nil {
			return err
		}
		e.MemberID, e.Member = mid, member
		e, err = insertEndpoint(ctx, tx, e)
		return err
	})
	return e, s.wrap("add endpoint", err)
}

// insertEndpoint stores e, of e.MemberID, as a new enabled endpoint.
func insertEndpoint(ctx context.Context, tx *sql.Tx, e certorder.Endpoint) (certorder.Endpoint, error) {
	e.CreatedAt, e.Enabled = time.Now().UTC().Truncate(time.Microsecond), true
	e.Format = certorder.EndpointFormat(e.Format)
	res, err := tx.ExecContext(ctx, `INSERT INTO webhook_endpoints (member_id, url, format, event_types, secret, enabled, created_at)
		VALUES (?, ?, ?, ?, ?, 1, ?)`, e.MemberID, e.URL, e.Format, strings.Join(e.EventTypes, ","), e.Secret, formatTime(e.CreatedAt))
	if err != nil {
		return e, err
	}
	e.ID, err = res.LastInsertId()
	return e, err
}

// AddMemberEndpoint stores a new endpoint of the member, within max, in
// one IMMEDIATE transaction as AddMemberKey.
func (s *Store) AddMemberEndpoint(ctx context.Context, memberID int64, e certorder.Endpoint, max int) (certorder.Endpoint, error) {
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		name, err := memberWithin(ctx, tx, "webhook_endpoints", memberID, max)
		if err != nil {
			return err
		}
		e.MemberID, e.Member = memberID, name
		e, err = insertEndpoint(ctx, tx, e)
		return err
	})
	return e, s.wrap("add endpoint", err)
}

// Endpoints lists a member's endpoints.
func (s *Store) Endpoints(ctx context.Context, member string) ([]certorder.Endpoint, error) {
	mid, err := memberID(ctx, s.read, member)
	if err != nil {
		return nil, s.wrap("list endpoints", err)
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e
		JOIN members m ON m.id = e.member_id WHERE e.member_id = ? ORDER BY e.id`, mid)
	if err != nil {
		return nil, s.wrap("list endpoints", err)
	}
	defer rows.Close()
	var es []certorder.Endpoint
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, s.wrap("list endpoints", err)
		}
		es = append(es, e)
	}
	return es, s.wrap("list endpoints", rows.Err())
}

// FindEndpoint returns one endpoint.
func (s *Store) FindEndpoint(ctx context.Context, id int64) (certorder.Endpoint, error) {
	e, err := scanEndpoint(s.read.QueryRowContext(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e
		JOIN members m ON m.id = e.member_id WHERE e.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = fmt.Errorf("%w: endpoint %d", certorder.ErrNotFound, id)
	}
	return e, s.wrap("find endpoint", err)
}

// RotateSecret gives an endpoint a new secret; the old one stays valid until previousUntil.
func (s *Store) RotateSecret(ctx context.Context, id int64, secret string, previousUntil time.Time) error {
	res, err := s.write.ExecContext(ctx, `UPDATE webhook_endpoints SET previous_secret = secret, previous_expires = ?,
		secret = ? WHERE id = ?`, formatTime(previousUntil), secret, id)
	return s.wrap("rotate secret", oneRow(res, err, fmt.Sprintf("endpoint %d", id)))
}

// DeleteEndpoint deletes an endpoint and its deliveries.
func (s *Store) DeleteEndpoint(ctx context.Context, id int64) error {
	res, err := s.write.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE id = ?`, id)
	return s.wrap("delete endpoint", oneRow(res, err, fmt.Sprintf("endpoint %d", id)))
}

const deliveryColumns = `d.id, d.endpoint_id, d.event_type, d.msg_id, d.body, d.state, d.attempts, d.next_attempt,
	d.created_at, d.last_attempt, d.last_status, d.last_class, d.last_latency_us, d.last_error`

func scanDelivery(row interface{ Scan(...any) error }, more ...any) (certorder.Delivery, error) {
	var d certorder.Delivery
	var next, created, last sql.NullString
	var latency int64
	err := row.Scan(append([]any{&d.ID, &d.EndpointID, &d.EventType, &d.MsgID, &d.Body, &d.State, &d.Attempts, &next,
		&created, &last, &d.LastStatus, &d.LastClass, &latency, &d.LastError}, more...)...)
	d.NextAttempt, d.CreatedAt, d.LastAttempt = parseTime(next), parseTime(created), parseTime(last)
	d.LastLatency = time.Duration(latency) * time.Microsecond
	return d, err
}

const insertDelivery = `INSERT INTO webhook_deliveries (endpoint_id, event_type, msg_id, body, state, next_attempt, created_at)
	VALUES (?, ?, ?, ?, 'pending', ?, ?)`

// FanOut queues the deliveries of events not yet fanned out. SQLite has one
// writer, so the transaction alone keeps two workers from taking one event.
func (s *Store) FanOut(ctx context.Context, limit int, build func(certorder.Event, string) (string, []byte, error)) (int, error) {
	n := 0
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		events, err := outboxEvents(ctx, tx, "fanned_out", limit)
		if err != nil {
			return err
		}
		stamp := now()
		for _, ev := range events {
			// A disabled member's events are posted to no one (docs/OPERATIONS.md).
			eps, err := tx.QueryContext(ctx, `SELECT id, format, event_types FROM webhook_endpoints WHERE member_id = ?1 AND enabled
				AND NOT (SELECT disabled FROM members WHERE id = ?1)`, ev.MemberID)
			if err != nil {
				return err
			}
			var targets []certorder.Endpoint
			for eps.Next() {
				var ep certorder.Endpoint
				var types string
				if err := eps.Scan(&ep.ID, &ep.Format, &types); err != nil {
					eps.Close()
					return err
				}
				if types == "" || slices.Contains(strings.Split(types, ","), ev.Type) {
					targets = append(targets, ep)
				}
			}
			eps.Close()
			for _, ep := range targets {
				msgID, body, err := build(ev, ep.Format)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, insertDelivery, ep.ID, ev.Type, msgID, body, stamp, stamp); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_events SET fanned_out = 1 WHERE id = ?`, ev.ID); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, s.wrap("fan out", err)
}

// ClaimDeliveries takes due deliveries with their endpoints, for lease.
func (s *Store) ClaimDeliveries(ctx context.Context, c certorder.Claim) ([]certorder.Delivery, error) {
	perMember := 0
	if c.RoundRobin {
		perMember = 1
	}
	skipE, skipM, served := int64List(c.SkipEndpoints), int64List(c.SkipMembers), int64List(c.Served)
	perEndpoint := "?6" // round-robin needs only each endpoint's first
	if c.RoundRobin {
		perEndpoint = "1"
	}
	var ds []certorder.Delivery
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		// Each endpoint's oldest due deliveries (an index probe each,
		// whatever the backlog), numbered within each member; served is
		// the member's place in c.Served (0: not listed, first).
		rows, err := tx.QueryContext(ctx, `UPDATE webhook_deliveries SET next_attempt = ?1
			WHERE id IN (SELECT id FROM (
				SELECT x.id, x.next_attempt, x.served, row_number() OVER (PARTITION BY x.member_id ORDER BY x.next_attempt, x.id) AS rn
				FROM (SELECT e.member_id, d.id, d.next_attempt,
						COALESCE((SELECT s.key + 1 FROM json_each(?7) s WHERE s.value = e.member_id), 0) AS served
					FROM webhook_endpoints e
					JOIN webhook_deliveries d ON d.id IN (SELECT d2.id FROM webhook_deliveries d2
						WHERE d2.endpoint_id = e.id AND d2.state = 'pending' AND d2.next_attempt <= ?2
						ORDER BY d2.next_attempt, d2.id LIMIT `+perEndpoint+`)
					WHERE e.id NOT IN (SELECT value FROM json_each(?3)) AND e.member_id NOT IN (SELECT value FROM json_each(?4))) x)
				WHERE ?5 = 0 OR rn <= ?5 ORDER BY rn, served, next_attempt, id LIMIT ?6)
			RETURNING id`, formatTime(c.At.Add(c.Lease)), formatTime(c.At), skipE, skipM, perMember, c.Limit, served)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			var ep certorder.Endpoint
			var types string
			var prevExpires, failing sql.NullString
			d, err := scanDelivery(tx.QueryRowContext(ctx, `SELECT `+deliveryColumns+`, e.url, e.secret, e.previous_secret,
				e.previous_expires, e.event_types, e.member_id, e.enabled, e.failing_since
				FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.id = ?`, id),
				&ep.URL, &ep.Secret, &ep.PreviousSecret, &prevExpires, &types, &ep.MemberID, &ep.Enabled, &failing)
			if err != nil {
				return err
			}
			ep.ID, ep.PreviousExpires, ep.FailingSince = d.EndpointID, parseTime(prevExpires), parseTime(failing)
			if types != "" {
				ep.EventTypes = strings.Split(types, ",")
			}
			d.Endpoint = &ep
			ds = append(ds, d)
		}
		return nil
	})
	return ds, s.wrap("claim deliveries", err)
}

// FinishAttempt records an attempt's outcome, and its endpoint's.
func (s *Store) FinishAttempt(ctx context.Context, a certorder.Attempt) error {
	return s.wrap("finish attempt", inTx(ctx, s.write, func(tx *sql.Tx) error {
		next := a.NextAttempt
		if next.IsZero() {
			next = a.At
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, next_attempt = ?,
			last_attempt = ?, last_status = ?, last_class = ?, last_latency_us = ?, last_error = ? WHERE id = ?`,
			a.State, formatTime(next), formatTime(a.At), a.Status, a.Class, a.Latency.Microseconds(), a.Error, a.DeliveryID); err != nil {
			return err
		}
		var err error
		switch {
		case a.Success:
			_, err = tx.ExecContext(ctx, `UPDATE webhook_endpoints SET last_success = ?, failing_since = NULL WHERE id = ?`,
				formatTime(a.At), a.EndpointID)
		case a.Disable != "":
			_, err = tx.ExecContext(ctx, `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ? WHERE id = ?`,
				a.Disable, a.EndpointID)
		default:
			_, err = tx.ExecContext(ctx, `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, ?) WHERE id = ?`,
				formatTime(a.At), a.EndpointID)
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
	rows, err := s.read.QueryContext(ctx, `SELECT `+storekit.EndingColumns+`, COALESCE((SELECT group_concat(threshold) FROM order_notices n
			WHERE n.order_id = o.id AND n.type = ? AND n.ends = o.`+col+`), '')
		FROM orders o`+storekit.LifecycleJoin+` WHERE o.`+col+` BETWEEN ? AND ?
		AND (EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.member_id = o.member_id AND e.enabled
			AND (e.event_types = '' OR ',' || e.event_types || ',' LIKE '%,' || ?4 || ',%'))
		OR EXISTS (SELECT 1 FROM notice_addresses a WHERE a.member_id = o.member_id
			AND a.confirmed_at IS NOT NULL AND a.unsubscribed_at IS NULL
			AND (a.event_types = '' OR ',' || a.event_types || ',' LIKE '%,' || ?4 || ',%')))
		ORDER BY o.id`, typ, from, to, typ)
	if err != nil {
		return nil, s.wrap("ending orders", err)
	}
	defer rows.Close()
	os, err := storekit.Collect(rows, storekit.ScanEnding)
	return os, s.wrap("ending orders", err)
}

// RecordEnding records an event of an end and its thresholds.
func (s *Store) RecordEnding(ctx context.Context, typ string, o certorder.EndingOrder, thresholds []int, data []byte, at time.Time) (bool, error) {
	recorded := false
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		for _, t := range thresholds {
			res, err := tx.ExecContext(ctx, `INSERT INTO order_notices (order_id, type, ends, threshold) VALUES (?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, o.ID, typ, o.End(typ), t)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				recorded = true
			}
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

const insertEvent = `INSERT INTO webhook_events (member_id, type, data, at) VALUES (?, ?, ?, ?)`

// eventBatchRows bounds addEvents' statements (4 variables a row).
const eventBatchRows = 500

// PruneWebhooks deletes old events and finished deliveries.
func (s *Store) PruneWebhooks(ctx context.Context, before time.Time) error {
	return s.wrap("prune webhooks", inTx(ctx, s.write, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_events WHERE fanned_out AND at < ?`, formatTime(before)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND created_at < ?`, formatTime(before))
		return err
	}))
}

// The member's own calls: every statement names the member, so another
// member's endpoint or delivery matches no row.

// MemberEndpoint returns one of the member's endpoints.
func (s *Store) MemberEndpoint(ctx context.Context, memberID, id int64) (certorder.Endpoint, error) {
	e, err := scanEndpoint(s.read.QueryRowContext(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e
		JOIN members m ON m.id = e.member_id WHERE e.id = ? AND e.member_id = ?`, id, memberID))
	if errors.Is(err, sql.ErrNoRows) {
		err = fmt.Errorf("%w: endpoint %d", certorder.ErrNotFound, id)
	}
	return e, s.wrap("find endpoint", err)
}

// SetMemberEndpointEnabled enables or disables one of the member's endpoints.
func (s *Store) SetMemberEndpointEnabled(ctx context.Context, memberID, id int64, enabled bool, reason string) error {
	if enabled {
		reason = ""
	}
	res, err := s.write.ExecContext(ctx, `UPDATE webhook_endpoints SET enabled = ?, disabled_reason = ?,
		failing_since = CASE WHEN ? THEN NULL ELSE failing_since END WHERE id = ? AND member_id = ?`,
		enabled, reason, enabled, id, memberID)
	return s.wrap("set endpoint", oneRow(res, err, fmt.Sprintf("endpoint %d", id)))
}

// DeleteMemberEndpoint deletes one of the member's endpoints and its deliveries.
func (s *Store) DeleteMemberEndpoint(ctx context.Context, memberID, id int64) error {
	res, err := s.write.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE id = ? AND member_id = ?`, id, memberID)
	return s.wrap("delete endpoint", oneRow(res, err, fmt.Sprintf("endpoint %d", id)))
}

// MemberDeliveries lists the latest deliveries of one of the member's endpoints.
func (s *Store) MemberDeliveries(ctx context.Context, memberID, endpointID int64, limit int) ([]certorder.Delivery, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d
		JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.endpoint_id = ? AND e.member_id = ? ORDER BY d.id DESC LIMIT ?`, endpointID, memberID, limit)
	if err != nil {
		return nil, s.wrap("list deliveries", err)
	}
	defer rows.Close()
	var ds []certorder.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, s.wrap("list deliveries", err)
		}
		ds = append(ds, d)
	}
	return ds, s.wrap("list deliveries", rows.Err())
}

// QueueMemberDelivery queues a message to one of the member's endpoints.
func (s *Store) QueueMemberDelivery(ctx context.Context, memberID, endpointID int64, eventType, msgID string, body []byte) (int64, error) {
	stamp := now()
	res, err := s.write.ExecContext(ctx, `INSERT INTO webhook_deliveries (endpoint_id, event_type, msg_id, body, state, next_attempt, created_at)
		SELECT id, ?, ?, ?, 'pending', ?, ? FROM webhook_endpoints WHERE id = ? AND member_id = ?`,
		eventType, msgID, body, stamp, stamp, endpointID, memberID)
	if err = oneRow(res, err, fmt.Sprintf("endpoint %d", endpointID)); err != nil {
		return 0, s.wrap("queue delivery", err)
	}
	id, err := res.LastInsertId()
	return id, s.wrap("queue delivery", err)
}

// RedeliverMemberDelivery queues a finished delivery of one of the
// member's endpoints again at once.
func (s *Store) RedeliverMemberDelivery(ctx context.Context, memberID, endpointID, deliveryID int64) error {
	return s.wrap("redeliver", inTx(ctx, s.write, func(tx *sql.Tx) error {
		var state string
		err := tx.QueryRowContext(ctx, `SELECT d.state FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.id = ? AND d.endpoint_id = ? AND e.member_id = ?`, deliveryID, endpointID, memberID).Scan(&state)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("%w: delivery %d", certorder.ErrNotFound, deliveryID)
		case err != nil:
			return err
		case state == certorder.DeliveryPending:
			return fmt.Errorf("%w: delivery %d is pending already", certorder.ErrConflict, deliveryID)
		}
		_, err = tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt = ?
			WHERE id = ?`, now(), deliveryID)
		return err
	}))
}

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
