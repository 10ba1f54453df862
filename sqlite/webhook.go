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
	"github.com/certorder/certorder/queue"
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
		mid, err := storekit.MemberID(ctx, sqlDB{q: tx}, member)
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
		name, err := s.MemberWithin(ctx, sqlDB{q: tx}, "webhook_endpoints", memberID, max)
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
	mid, err := storekit.MemberID(ctx, s.Read, member)
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
	return s.wrap("delete endpoint", s.deleteEndpoint(ctx, `id = ?`, id))
}

// deleteEndpoint deletes the endpoint where selects, args[0] its ID, and its jobs.
func (s *Store) deleteEndpoint(ctx context.Context, where string, args ...any) error {
	return inTx(ctx, s.write, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE `+where, args...)
		if err := oneRow(res, err, fmt.Sprintf("endpoint %d", args[0])); err != nil {
			return err
		}
		return s.DeleteJobs(ctx, sqlDB{q: tx}, args[0].(int64), queue.KindWebhook)
	})
}

// FanOut queues the jobs build makes of the events not yet fanned out, one
// for each enabled endpoint of the event's member that wants it. SQLite has
// one writer, so the transaction alone keeps two workers from taking one
// event.
func (s *Store) FanOut(ctx context.Context, limit int, build func(certorder.Event, certorder.Endpoint) (queue.Job, error)) (int, error) {
	n := 0
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		events, err := outboxEvents(ctx, sqlDB{q: tx}, "fanned_out", limit)
		if err != nil {
			return err
		}
		at := time.Now()
		for _, ev := range events {
			// A disabled member's events are posted to no one (docs/OPERATIONS.md).
			rows, err := tx.QueryContext(ctx, `SELECT id, member_id, format, event_types FROM webhook_endpoints
				WHERE member_id = ?1 AND enabled AND NOT (SELECT disabled FROM members WHERE id = ?1)`, ev.MemberID)
			if err != nil {
				return err
			}
			targets, err := storekit.Collect(rows, func(row storekit.Row) (certorder.Endpoint, error) {
				var ep certorder.Endpoint
				var types string
				err := row.Scan(&ep.ID, &ep.MemberID, &ep.Format, &types)
				if types != "" {
					ep.EventTypes = strings.Split(types, ",")
				}
				return ep, err
			})
			rows.Close()
			if err != nil {
				return err
			}
			for _, ep := range targets {
				if len(ep.EventTypes) > 0 && !slices.Contains(ep.EventTypes, ev.Type) {
					continue
				}
				j, err := build(ev, ep)
				if err != nil {
					return err
				}
				if _, err := storekit.InsertJob(ctx, sqlDB{q: tx}, j, at); err != nil {
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

// RecordEndpointAttempt records on an endpoint how an attempt to it went.
func (s *Store) RecordEndpointAttempt(ctx context.Context, id int64, at time.Time, ok bool, disable string) error {
	var err error
	switch {
	case ok:
		_, err = s.write.ExecContext(ctx, `UPDATE webhook_endpoints SET last_success = ?, failing_since = NULL WHERE id = ?`,
			formatTime(at), id)
	case disable != "":
		_, err = s.write.ExecContext(ctx, `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ? WHERE id = ?`, disable, id)
	default:
		_, err = s.write.ExecContext(ctx, `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, ?) WHERE id = ?`,
			formatTime(at), id)
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
func (s *Store) RecordEnding(ctx context.Context, typ string, o storekit.EndingOrder, thresholds []int, data []byte, at time.Time) (bool, error) {
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
// transaction (storekit.EventWriter).
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

// PruneEvents deletes the events fanned out before before.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) error {
	_, err := s.write.ExecContext(ctx, `DELETE FROM webhook_events WHERE fanned_out AND at < ?`, formatTime(before))
	return s.wrap("prune events", err)
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
	return s.wrap("delete endpoint", s.deleteEndpoint(ctx, `id = ? AND member_id = ?`, id, memberID))
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
