package storekit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
)

// Members' webhook endpoints and the fan-out of the order events to them,
// as both stores keep them. What takes the events (Kit.SkipLocked) and
// finds an event's endpoints (Kit.EndpointTargets) is each store's.

const endpointColumns = `e.id, e.member_id, m.name, e.url, e.format, e.event_types, e.secret, e.previous_secret,
	e.previous_expires, e.enabled, e.disabled_reason, e.created_at, e.last_success, e.failing_since`

func scanEndpoint(row Row) (certorder.Endpoint, error) {
	var e certorder.Endpoint
	var types string
	var prevExpires, created, success, failing Time
	err := row.Scan(&e.ID, &e.MemberID, &e.Member, &e.URL, &e.Format, &types, &e.Secret, &e.PreviousSecret,
		&prevExpires, &e.Enabled, &e.DisabledReason, &created, &success, &failing)
	e.EventTypes = EventTypes(types)
	e.PreviousExpires, e.CreatedAt = prevExpires.T, created.T
	e.LastSuccess, e.FailingSince = success.T, failing.T
	return e, err
}

// AddEndpoint stores a new endpoint of a member.
func (k *Kit) AddEndpoint(ctx context.Context, member string, e certorder.Endpoint) (certorder.Endpoint, error) {
	err := k.Write.InTx(ctx, func(tx DB) error {
		mid, err := MemberID(ctx, tx, member)
		if err != nil {
			return err
		}
		e.MemberID, e.Member = mid, member
		return insertEndpoint(ctx, tx, &e)
	})
	return e, k.Wrap("add endpoint", err)
}

// insertEndpoint stores e, of e.MemberID, as a new enabled endpoint, and
// fills in its ID and creation time.
func insertEndpoint(ctx context.Context, tx DB, e *certorder.Endpoint) error {
	e.CreatedAt, e.Enabled = time.Now().UTC().Truncate(time.Microsecond), true
	e.Format = certorder.EndpointFormat(e.Format)
	return tx.QueryRow(ctx, `INSERT INTO webhook_endpoints (member_id, url, format, event_types, secret, enabled, created_at)
		VALUES (?, ?, ?, ?, ?, true, ?) RETURNING id`, e.MemberID, e.URL, e.Format, strings.Join(e.EventTypes, ","),
		e.Secret, e.CreatedAt).Scan(&e.ID)
}

// AddMemberEndpoint stores a new endpoint of the member, within max
// (MemberWithin).
func (k *Kit) AddMemberEndpoint(ctx context.Context, memberID int64, e certorder.Endpoint, max int) (certorder.Endpoint, error) {
	err := k.Write.InTx(ctx, func(tx DB) error {
		name, err := k.MemberWithin(ctx, tx, "webhook_endpoints", memberID, max)
		if err != nil {
			return err
		}
		e.MemberID, e.Member = memberID, name
		return insertEndpoint(ctx, tx, &e)
	})
	return e, k.Wrap("add endpoint", err)
}

// Endpoints lists a member's endpoints.
func (k *Kit) Endpoints(ctx context.Context, member string) ([]certorder.Endpoint, error) {
	mid, err := MemberID(ctx, k.Read, member)
	if err != nil {
		return nil, k.Wrap("list endpoints", err)
	}
	es, err := Query(ctx, k.Read, scanEndpoint, `SELECT `+endpointColumns+` FROM webhook_endpoints e
		JOIN members m ON m.id = e.member_id WHERE e.member_id = ? ORDER BY e.id`, mid)
	return es, k.Wrap("list endpoints", err)
}

// FindEndpoint returns one endpoint.
func (k *Kit) FindEndpoint(ctx context.Context, id int64) (certorder.Endpoint, error) {
	return k.findEndpoint(ctx, id, `e.id = ?`, id)
}

// MemberEndpoint returns one of the member's endpoints: every statement of
// the member's own calls names the member, so another member's endpoint
// or delivery matches no row.
func (k *Kit) MemberEndpoint(ctx context.Context, memberID, id int64) (certorder.Endpoint, error) {
	return k.findEndpoint(ctx, id, `e.id = ? AND e.member_id = ?`, id, memberID)
}

func (k *Kit) findEndpoint(ctx context.Context, id int64, where string, args ...any) (certorder.Endpoint, error) {
	e, err := scanEndpoint(k.Read.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e
		JOIN members m ON m.id = e.member_id WHERE `+where, args...))
	return e, k.Wrap("find endpoint", notFound(err, fmt.Sprintf("endpoint %d", id)))
}

// RotateSecret gives an endpoint a new secret; the old one stays valid until previousUntil.
func (k *Kit) RotateSecret(ctx context.Context, id int64, secret string, previousUntil time.Time) error {
	n, err := k.Write.Exec(ctx, `UPDATE webhook_endpoints SET previous_secret = secret, previous_expires = ?,
		secret = ? WHERE id = ?`, previousUntil, secret, id)
	return k.Wrap("rotate secret", oneRow(n, err, fmt.Sprintf("endpoint %d", id)))
}

// SetMemberEndpointEnabled enables or disables one of the member's endpoints.
func (k *Kit) SetMemberEndpointEnabled(ctx context.Context, memberID, id int64, enabled bool, reason string) error {
	if enabled {
		reason = ""
	}
	n, err := k.Write.Exec(ctx, `UPDATE webhook_endpoints SET enabled = ?, disabled_reason = ?,
		failing_since = CASE WHEN ? THEN NULL ELSE failing_since END WHERE id = ? AND member_id = ?`,
		enabled, reason, enabled, id, memberID)
	return k.Wrap("set endpoint", oneRow(n, err, fmt.Sprintf("endpoint %d", id)))
}

// DeleteEndpoint deletes an endpoint and its deliveries.
func (k *Kit) DeleteEndpoint(ctx context.Context, id int64) error {
	return k.Wrap("delete endpoint", k.deleteEndpoint(ctx, `id = ?`, id))
}

// DeleteMemberEndpoint deletes one of the member's endpoints and its deliveries.
func (k *Kit) DeleteMemberEndpoint(ctx context.Context, memberID, id int64) error {
	return k.Wrap("delete endpoint", k.deleteEndpoint(ctx, `id = ? AND member_id = ?`, id, memberID))
}

// deleteEndpoint deletes the endpoint where selects, args[0] its ID, and its jobs.
func (k *Kit) deleteEndpoint(ctx context.Context, where string, args ...any) error {
	return k.Write.InTx(ctx, func(tx DB) error {
		n, err := tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE `+where, args...)
		if err := oneRow(n, err, fmt.Sprintf("endpoint %d", args[0])); err != nil {
			return err
		}
		return k.DeleteJobs(ctx, tx, args[0].(int64), queue.KindWebhook)
	})
}

// FanOut queues the jobs build makes of the events not yet fanned out, one
// for each enabled endpoint of the event's member that wants it
// (EndpointTargets; a disabled member's events are posted to no one,
// docs/OPERATIONS.md).
func (k *Kit) FanOut(ctx context.Context, limit int, build func(certorder.Event, certorder.Endpoint) (queue.Job, error)) (int, error) {
	n := 0
	err := k.Write.InTx(ctx, func(tx DB) error {
		n = 0
		events, err := k.takeEvents(ctx, tx, "fanned_out", limit)
		if err != nil {
			return err
		}
		at := time.Now()
		for _, ev := range events {
			targets, err := k.EndpointTargets(ctx, tx, ev)
			if err != nil {
				return err
			}
			for _, ep := range targets {
				j, err := build(ev, ep)
				if err != nil {
					return err
				}
				if _, err := InsertJob(ctx, tx, j, at); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `UPDATE webhook_events SET fanned_out = true WHERE id = ?`, ev.ID); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, k.Wrap("fan out", err)
}

// RecordEndpointAttempt records on an endpoint how an attempt to it went.
func (k *Kit) RecordEndpointAttempt(ctx context.Context, id int64, at time.Time, ok bool, disable string) error {
	var err error
	switch {
	case ok:
		_, err = k.Write.Exec(ctx, `UPDATE webhook_endpoints SET last_success = ?, failing_since = NULL WHERE id = ?`, at, id)
	case disable != "":
		_, err = k.Write.Exec(ctx, `UPDATE webhook_endpoints SET enabled = false, disabled_reason = ? WHERE id = ?`, disable, id)
	default:
		_, err = k.Write.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, ?) WHERE id = ?`, at, id)
	}
	return k.Wrap("record endpoint attempt", err)
}

// RecordEnding records an event of an end and its thresholds.
func (k *Kit) RecordEnding(ctx context.Context, typ string, o EndingOrder, thresholds []int, data []byte, at time.Time) (bool, error) {
	recorded := false
	err := k.Write.InTx(ctx, func(tx DB) error {
		recorded = false
		for _, t := range thresholds {
			n, err := tx.Exec(ctx, `INSERT INTO order_notices (order_id, type, ends, threshold) VALUES (?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, o.ID, typ, o.End(typ), t)
			if err != nil {
				return err
			}
			recorded = recorded || n > 0
		}
		if !recorded {
			return nil
		}
		return k.WriteEvents(ctx, tx, []certorder.Event{{MemberID: o.MemberID, Type: typ, Data: data, At: at}})
	})
	return recorded, k.Wrap("record "+typ, err)
}

// PruneEvents deletes the events fanned out before before.
func (k *Kit) PruneEvents(ctx context.Context, before time.Time) error {
	_, err := k.Write.Exec(ctx, `DELETE FROM webhook_events WHERE fanned_out AND at < ?`, before)
	return k.Wrap("prune events", err)
}

// EndingOrders lists orders whose certificate or plan ends in a window, of
// members with an endpoint or an address for the event.
func (k *Kit) EndingOrders(ctx context.Context, typ, from, to string) ([]EndingOrder, error) {
	col, err := EndColumn(typ)
	if err != nil {
		return nil, err
	}
	os, err := Query(ctx, k.Read, ScanEnding, `SELECT `+EndingColumns+`, COALESCE((SELECT `+fmt.Sprintf(k.Joined, "threshold")+`
			FROM order_notices n WHERE n.order_id = o.id AND n.type = ? AND n.ends = o.`+col+`), '')
		FROM orders o`+LifecycleJoin+` WHERE o.`+col+` BETWEEN ? AND ?
		AND (EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.member_id = o.member_id AND e.enabled
			AND (e.event_types = '' OR `+k.InTypes("e.event_types")+`))
		OR EXISTS (SELECT 1 FROM notice_addresses a WHERE a.member_id = o.member_id
			AND a.confirmed_at IS NOT NULL AND a.unsubscribed_at IS NULL
			AND (a.event_types = '' OR `+k.InTypes("a.event_types")+`)))
		ORDER BY o.id`, typ, from, to, typ, typ)
	return os, k.Wrap("ending orders", err)
}
