package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/queue"
)

// E-mail notices: members' addresses, and the order events queued for
// them (jobs of the notice kinds). SQLite has one writer, so each
// transaction alone keeps two workers from taking one event.

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
		// The blocks and the confirmations' budget: the write connection is
		// one and its transactions begin IMMEDIATE, so a count and the insert
		// after it cannot interleave with another add.
		if err := storekit.AdmitNoticeAddress(ctx, sqlDB{q: tx}, a); err != nil || !a.ConfirmedAt.IsZero() {
			return err
		}
		_, err = insertJob(ctx, tx, queue.Job{Kind: queue.KindNoticeConfirm, MemberID: memberID, SubjectID: a.ID}, a.CreatedAt)
		return err
	})
	return a, s.wrap("add notice address", err)
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
	return s.wrap("delete notice address", inTx(ctx, s.write, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM notice_addresses WHERE id = ? AND member_id = ?`, id, memberID)
		if err := oneRow(res, err, fmt.Sprintf("notice address %d", id)); err != nil {
			return err
		}
		return deleteJobs(ctx, tx, id, queue.NoticeKinds...)
	}))
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

// QueueNotices queues the jobs plan makes of the events not yet queued for
// notices, one for each active address of the event's member that wants it.
func (s *Store) QueueNotices(ctx context.Context, limit int, at time.Time,
	plan func(ev certorder.Event, a certorder.NoticeAddress, today int) (queue.Job, bool)) (taken, queued int, err error) {
	err = inTx(ctx, s.write, func(tx *sql.Tx) error {
		taken, queued = 0, 0
		events, err := outboxEvents(ctx, tx, "noticed", limit)
		if err != nil {
			return err
		}
		for _, ev := range events {
			addrs, err := noticeTargets(ctx, tx, ev)
			if err != nil {
				return err
			}
			for _, a := range addrs {
				if ok, err := queueNotice(ctx, tx, a, ev, at, plan); err != nil {
					return err
				} else if ok {
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
func noticeTargets(ctx context.Context, tx *sql.Tx, ev certorder.Event) ([]certorder.NoticeAddress, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, member_id, event_types FROM notice_addresses WHERE member_id = ?
		AND confirmed_at IS NOT NULL AND unsubscribed_at IS NULL`, ev.MemberID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	addrs, err := storekit.Collect(rows, func(row storekit.Row) (certorder.NoticeAddress, error) {
		var a certorder.NoticeAddress
		var types string
		err := row.Scan(&a.ID, &a.MemberID, &types)
		if types != "" {
			a.EventTypes = strings.Split(types, ",")
		}
		return a, err
	})
	return slices.DeleteFunc(addrs, func(a certorder.NoticeAddress) bool { return !a.Wants(ev.Type) }), err
}

// queueNotice queues the job plan makes of one event for an address,
// told how many events the address was sent one by one on at's day (UTC),
// with the event it tells.
func queueNotice(ctx context.Context, tx *sql.Tx, a certorder.NoticeAddress, ev certorder.Event, at time.Time,
	plan func(certorder.Event, certorder.NoticeAddress, int) (queue.Job, bool)) (bool, error) {
	day := at.UTC().Truncate(24 * time.Hour)
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE subject_id = ? AND kind = ? AND created_at >= ? AND created_at < ?`,
		a.ID, queue.KindNoticeEvent, formatTime(day), formatTime(day.Add(24*time.Hour))).Scan(&n); err != nil {
		return false, err
	}
	j, ok := plan(ev, a, n)
	if !ok {
		return false, nil
	}
	id, err := insertJob(ctx, tx, j, at)
	if err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO notice_events (job_id, type, data, at) VALUES (?, ?, ?, ?)`,
		id, ev.Type, string(ev.Data), formatTime(ev.At))
	return true, err
}

// NoticeEvents returns the first limit events a notice tells, oldest
// first, and how many it tells.
func (s *Store) NoticeEvents(ctx context.Context, jobID int64, limit int) ([]certorder.Event, int, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT j.member_id, e.type, e.data, e.at, count(*) OVER () FROM notice_events e
		JOIN jobs j ON j.id = e.job_id WHERE e.job_id = ? ORDER BY e.id LIMIT ?`, jobID, limit)
	if err != nil {
		return nil, 0, s.wrap("notice events", err)
	}
	defer rows.Close()
	total := 0
	evs, err := storekit.Collect(rows, func(row storekit.Row) (certorder.Event, error) {
		var e certorder.Event
		var at sql.NullString
		err := row.Scan(&e.MemberID, &e.Type, &e.Data, &at, &total)
		e.At = parseTime(at)
		return e, err
	})
	return evs, total, s.wrap("notice events", err)
}
