package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// E-mail notices: members' addresses and the outbox of messages to them.
// SQLite has one writer, so each transaction alone keeps two workers from
// taking one event or one message.

const noticeAddressColumns = `a.id, a.member_id, m.name, a.address, a.lang, a.event_types, a.secret, a.created_at,
	a.confirmed_at, a.unsubscribed_at, a.last_sent, a.failed_at, a.failure, a.failure_kind,
	a.retry_failed_at, a.retry_failure, a.retry_at, m.disabled`

func scanNoticeAddress(row interface{ Scan(...any) error }, more ...any) (certorder.NoticeAddress, error) {
	var a certorder.NoticeAddress
	var types string
	var created, confirmed, unsubscribed, sent, failed, retryFailed, retryAt sql.NullString
	err := row.Scan(append([]any{&a.ID, &a.MemberID, &a.Member, &a.Address, &a.Lang, &types, &a.Secret, &created,
		&confirmed, &unsubscribed, &sent, &failed, &a.Failure, &a.FailureKind,
		&retryFailed, &a.RetryFailure, &retryAt, &a.MemberDisabled}, more...)...)
	if types != "" {
		a.EventTypes = strings.Split(types, ",")
	}
	a.CreatedAt, a.ConfirmedAt, a.UnsubscribedAt = parseTime(created), parseTime(confirmed), parseTime(unsubscribed)
	a.LastSent, a.FailedAt = parseTime(sent), parseTime(failed)
	a.RetryFailedAt, a.RetryAt = parseTime(retryFailed), parseTime(retryAt)
	return a, err
}

// nullTime is t as stored, NULL when zero.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}

// NoticeAddresses lists the member's addresses.
func (s *Store) NoticeAddresses(ctx context.Context, memberID int64) ([]certorder.NoticeAddress, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+noticeAddressColumns+` FROM notice_addresses a
		JOIN members m ON m.id = a.member_id WHERE a.member_id = ? ORDER BY a.id`, memberID)
	if err != nil {
		return nil, s.wrap("list notice addresses", err)
	}
	defer rows.Close()
	var as []certorder.NoticeAddress
	for rows.Next() {
		a, err := scanNoticeAddress(rows)
		if err != nil {
			return nil, s.wrap("list notice addresses", err)
		}
		as = append(as, a)
	}
	return as, s.wrap("list notice addresses", rows.Err())
}

// AddNoticeAddress stores a new address of the member, within max, and
// queues the confirmation of one not confirmed.
func (s *Store) AddNoticeAddress(ctx context.Context, memberID int64, a certorder.NoticeAddress, max int) (certorder.NoticeAddress, error) {
	if a.CreatedAt.IsZero() {
		a.CreatedAt = time.Now()
	}
	a.CreatedAt = a.CreatedAt.UTC().Truncate(time.Microsecond)
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		name, err := memberWithin(ctx, tx, "notice_addresses", memberID, max)
		if err != nil {
			return err
		}
		a.MemberID, a.Member = memberID, name
		res, err := tx.ExecContext(ctx, `INSERT INTO notice_addresses (member_id, address, lang, event_types, secret, created_at, confirmed_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, memberID, a.Address, a.Lang, strings.Join(a.EventTypes, ","), a.Secret,
			formatTime(a.CreatedAt), nullTime(a.ConfirmedAt))
		if err != nil {
			return err
		}
		if a.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		if err := admitNoticeAddress(ctx, tx, a); err != nil || !a.ConfirmedAt.IsZero() {
			return err
		}
		_, err = insertNotice(ctx, tx, a.ID, certorder.NoticeConfirm, a.CreatedAt, a.CreatedAt)
		return err
	})
	return a, s.wrap("add notice address", err)
}

// insertNotice queues a message of kind to an address, due at due.
func insertNotice(ctx context.Context, tx *sql.Tx, addressID int64, kind string, at, due time.Time) (int64, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO notice_messages (address_id, kind, day, state, next_attempt, created_at)
		VALUES (?, ?, ?, 'pending', ?, ?)`, addressID, kind, at.UTC().Format(certorder.DateLayout), formatTime(due), formatTime(at))
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// MemberNoticeAddress returns one of the member's addresses.
func (s *Store) MemberNoticeAddress(ctx context.Context, memberID, id int64) (certorder.NoticeAddress, error) {
	return s.findNoticeAddress(ctx, `a.id = ? AND a.member_id = ?`, id, memberID)
}

// FindNoticeAddress returns an address by its ID.
func (s *Store) FindNoticeAddress(ctx context.Context, id int64) (certorder.NoticeAddress, error) {
	return s.findNoticeAddress(ctx, `a.id = ?`, id)
}

func (s *Store) findNoticeAddress(ctx context.Context, where string, args ...any) (certorder.NoticeAddress, error) {
	a, err := scanNoticeAddress(s.read.QueryRowContext(ctx, `SELECT `+noticeAddressColumns+` FROM notice_addresses a
		JOIN members m ON m.id = a.member_id WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		err = fmt.Errorf("%w: notice address %d", certorder.ErrNotFound, args[0])
	}
	return a, s.wrap("find notice address", err)
}

// SetMemberNoticeAddress changes one of the member's addresses.
func (s *Store) SetMemberNoticeAddress(ctx context.Context, memberID, id int64, lang string, events []string) error {
	res, err := s.write.ExecContext(ctx, `UPDATE notice_addresses SET lang = ?, event_types = ? WHERE id = ? AND member_id = ?`,
		lang, strings.Join(events, ","), id, memberID)
	return s.wrap("set notice address", oneRow(res, err, fmt.Sprintf("notice address %d", id)))
}

// DeleteMemberNoticeAddress deletes one of the member's addresses and its messages.
func (s *Store) DeleteMemberNoticeAddress(ctx context.Context, memberID, id int64) error {
	res, err := s.write.ExecContext(ctx, `DELETE FROM notice_addresses WHERE id = ? AND member_id = ?`, id, memberID)
	return s.wrap("delete notice address", oneRow(res, err, fmt.Sprintf("notice address %d", id)))
}

// ConfirmNoticeAddress confirms an address, once.
func (s *Store) ConfirmNoticeAddress(ctx context.Context, id int64, at time.Time) error {
	return s.wrap("confirm notice address", inTx(ctx, s.write, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE notice_addresses SET confirmed_at = ? WHERE id = ? AND confirmed_at IS NULL`,
			formatTime(at), id)
		if err := oneRow(res, err, fmt.Sprintf("notice address %d", id)); !errors.Is(err, certorder.ErrNotFound) {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM notice_addresses WHERE id = ?`, id).Scan(&n); err != nil || n == 0 {
			return cmp.Or(err, fmt.Errorf("%w: notice address %d", certorder.ErrNotFound, id))
		}
		return fmt.Errorf("%w: notice address %d is confirmed already", certorder.ErrConflict, id)
	}))
}

// UnsubscribeNoticeAddress stops the messages to an address.
func (s *Store) UnsubscribeNoticeAddress(ctx context.Context, id int64, at time.Time) error {
	res, err := s.write.ExecContext(ctx, `UPDATE notice_addresses SET unsubscribed_at = COALESCE(unsubscribed_at, ?) WHERE id = ?`,
		formatTime(at), id)
	return s.wrap("unsubscribe notice address", oneRow(res, err, fmt.Sprintf("notice address %d", id)))
}

// QueueNotices queues the events not yet queued for the addresses that want them.
func (s *Store) QueueNotices(ctx context.Context, limit int, at time.Time, maxAge time.Duration) (taken, queued int, err error) {
	err = inTx(ctx, s.write, func(tx *sql.Tx) error {
		events, err := outboxEvents(ctx, tx, "noticed", limit)
		if err != nil {
			return err
		}
		for _, ev := range events {
			if !ev.At.Before(at.Add(-maxAge)) {
				ids, err := noticeTargets(ctx, tx, ev)
				if err != nil {
					return err
				}
				for _, id := range ids {
					if err := queueNotice(ctx, tx, id, ev, at); err != nil {
						return err
					}
					queued++
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_events SET noticed = 1 WHERE id = ?`, ev.ID); err != nil {
				return err
			}
			taken++
		}
		return nil
	})
	return taken, queued, s.wrap("queue notices", err)
}

// outboxEvents are up to limit events of the outbox whose flag
// (fanned_out: the webhooks'; noticed: the notices') is not set, oldest first.
func outboxEvents(ctx context.Context, tx *sql.Tx, flag string, limit int) ([]certorder.Event, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, member_id, type, data, at FROM webhook_events
		WHERE `+flag+` = 0 ORDER BY id LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return storekit.Collect(rows, func(row storekit.Row) (certorder.Event, error) {
		var e certorder.Event
		var at sql.NullString
		err := row.Scan(&e.ID, &e.MemberID, &e.Type, &e.Data, &at)
		e.At = parseTime(at)
		return e, err
	})
}

// memberWithin is the name of member memberID, which holds fewer than max
// rows of table (its endpoints, its addresses), else ErrLimit. The write
// connection is one, and its transactions begin IMMEDIATE, so the count
// and the insert that follows cannot interleave with another writer's.
func memberWithin(ctx context.Context, tx *sql.Tx, table string, memberID int64, max int) (string, error) {
	name, err := memberName(ctx, tx, memberID)
	if err != nil {
		return "", err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE member_id = ?`, memberID).Scan(&n); err != nil {
		return "", err
	}
	if n >= max {
		return "", fmt.Errorf("%w: %d in %s", certorder.ErrLimit, n, table)
	}
	return name, nil
}

// noticeTargets are the active addresses of the event's member that want it.
func noticeTargets(ctx context.Context, tx *sql.Tx, ev certorder.Event) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, event_types FROM notice_addresses WHERE member_id = ?
		AND confirmed_at IS NOT NULL AND unsubscribed_at IS NULL`, ev.MemberID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var a certorder.NoticeAddress
		var types string
		if err := rows.Scan(&a.ID, &types); err != nil {
			return nil, err
		}
		if types != "" {
			a.EventTypes = strings.Split(types, ",")
		}
		if a.Wants(ev.Type) {
			ids = append(ids, a.ID)
		}
	}
	return ids, rows.Err()
}

// queueNotice queues one event for an address: a message of its own while
// the address has had fewer than NoticeDailyEvents today, else into the
// day's digest, due as the day ends.
func queueNotice(ctx context.Context, tx *sql.Tx, addressID int64, ev certorder.Event, at time.Time) error {
	day := at.UTC().Format(certorder.DateLayout)
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM notice_messages WHERE address_id = ? AND day = ? AND kind = 'event'`,
		addressID, day).Scan(&n); err != nil {
		return err
	}
	var id int64
	var err error
	if n < certorder.NoticeDailyEvents {
		id, err = insertNotice(ctx, tx, addressID, certorder.NoticeEvent, at, at)
	} else {
		err = tx.QueryRowContext(ctx, `INSERT INTO notice_messages (address_id, kind, day, state, next_attempt, created_at)
			VALUES (?, 'digest', ?, 'pending', ?, ?)
			ON CONFLICT (address_id, day) WHERE kind = 'digest' DO UPDATE SET kind = excluded.kind RETURNING id`,
			addressID, day, formatTime(digestDue(at)), formatTime(at)).Scan(&id)
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO notice_events (message_id, type, data, at) VALUES (?, ?, ?, ?)`,
		id, ev.Type, string(ev.Data), formatTime(ev.At))
	return err
}

// digestDue is when the digest of at's day is sent: as the day (UTC) ends.
func digestDue(at time.Time) time.Time {
	y, m, d := at.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

const noticeColumns = `n.id, n.kind, n.day, n.state, n.attempts, n.next_attempt, n.created_at, n.last_error`

// ClaimNotices takes due notices with their addresses and events, for lease.
func (s *Store) ClaimNotices(ctx context.Context, at time.Time, lease time.Duration, limit int) ([]certorder.Notice, error) {
	var ns []certorder.Notice
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE notice_messages SET next_attempt = ?1 WHERE id IN (
			SELECT id FROM notice_messages WHERE state = 'pending' AND next_attempt <= ?2 ORDER BY next_attempt, id LIMIT ?3)
			RETURNING id`, formatTime(at.Add(lease)), formatTime(at), limit)
		if err != nil {
			return err
		}
		ids, err := storekit.Collect(rows, func(row storekit.Row) (id int64, err error) { return id, row.Scan(&id) })
		rows.Close()
		if err != nil {
			return err
		}
		for _, id := range ids {
			n, err := claimedNotice(ctx, tx, id)
			if err != nil {
				return err
			}
			ns = append(ns, n)
		}
		return nil
	})
	return ns, s.wrap("claim notices", err)
}

// claimedNotice reads notice id with its address and events.
func claimedNotice(ctx context.Context, tx *sql.Tx, id int64) (certorder.Notice, error) {
	var n certorder.Notice
	var next, created sql.NullString
	var err error
	n.Address, err = scanNoticeAddress(tx.QueryRowContext(ctx, `SELECT `+noticeAddressColumns+`, `+noticeColumns+`
		FROM notice_messages n JOIN notice_addresses a ON a.id = n.address_id JOIN members m ON m.id = a.member_id
		WHERE n.id = ?`, id), &n.ID, &n.Kind, &n.Day, &n.State, &n.Attempts, &next, &created, &n.LastError)
	if err != nil {
		return n, err
	}
	n.NextAttempt, n.CreatedAt = parseTime(next), parseTime(created)
	rows, err := tx.QueryContext(ctx, `SELECT type, data, at FROM notice_events WHERE message_id = ? ORDER BY id`, id)
	if err != nil {
		return n, err
	}
	defer rows.Close()
	for rows.Next() {
		e := certorder.Event{MemberID: n.Address.MemberID}
		var evAt sql.NullString
		if err := rows.Scan(&e.Type, &e.Data, &evAt); err != nil {
			return n, err
		}
		e.At = parseTime(evAt)
		n.Events = append(n.Events, e)
	}
	return n, rows.Err()
}

// FinishNotice records an attempt's outcome, and its address's.
func (s *Store) FinishNotice(ctx context.Context, a certorder.NoticeAttempt) error {
	return s.wrap("finish notice", inTx(ctx, s.write, func(tx *sql.Tx) error {
		next := a.NextAttempt
		if next.IsZero() {
			next = a.At
		}
		if _, err := tx.ExecContext(ctx, `UPDATE notice_messages SET state = ?, attempts = attempts + 1, next_attempt = ?,
			last_attempt = ?, last_error = ? WHERE id = ?`, a.State, formatTime(next), formatTime(a.At), a.Error, a.NoticeID); err != nil {
			return err
		}
		return recordAttempt(ctx, tx, a)
	}))
}

// PruneNotices deletes the notices finished before before.
func (s *Store) PruneNotices(ctx context.Context, before time.Time) error {
	_, err := s.write.ExecContext(ctx, `DELETE FROM notice_messages WHERE state <> 'pending' AND created_at < ?`, formatTime(before))
	return s.wrap("prune notices", err)
}
