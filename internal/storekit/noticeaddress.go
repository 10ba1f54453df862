package storekit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
)

// E-mail notices: members' addresses, and the order events queued for
// them (jobs of the notice kinds), as both stores keep them. What takes
// the events for the queue is each store's (Kit.SkipLocked,
// Kit.NoticeTargets): PostgreSQL's instances share the work by FOR UPDATE
// SKIP LOCKED, SQLite's one writer alone keeps two workers from taking one
// event.

const noticeAddressColumns = `a.id, a.member_id, m.name, a.address, a.lang, a.event_types, a.secret, a.created_at,
	a.confirmed_at, a.unsubscribed_at, a.last_sent, a.failed_at, a.failure, a.failure_kind,
	a.retry_failed_at, a.retry_failure, a.retry_at, m.disabled`

func scanNoticeAddress(row Row) (certorder.NoticeAddress, error) {
	var a certorder.NoticeAddress
	var types string
	var created, confirmed, unsubscribed, sent, failed, retryFailed, retryAt Time
	err := row.Scan(&a.ID, &a.MemberID, &a.Member, &a.Address, &a.Lang, &types, &a.Secret, &created,
		&confirmed, &unsubscribed, &sent, &failed, &a.Failure, &a.FailureKind,
		&retryFailed, &a.RetryFailure, &retryAt, &a.MemberDisabled)
	a.EventTypes = EventTypes(types)
	a.CreatedAt, a.ConfirmedAt, a.UnsubscribedAt = created.T, confirmed.T, unsubscribed.T
	a.LastSent, a.FailedAt = sent.T, failed.T
	a.RetryFailedAt, a.RetryAt = retryFailed.T, retryAt.T
	return a, err
}

// EventTypes reads a stored list of event types ("" for all).
func EventTypes(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// NoticeAddresses lists the member's addresses.
func (k *Kit) NoticeAddresses(ctx context.Context, memberID int64) ([]certorder.NoticeAddress, error) {
	as, err := Query(ctx, k.Read, scanNoticeAddress, `SELECT `+noticeAddressColumns+` FROM notice_addresses a
		JOIN members m ON m.id = a.member_id WHERE a.member_id = ? ORDER BY a.id`, memberID)
	return as, k.Wrap("list notice addresses", err)
}

// MemberWithin is the name of member memberID, locked for tx (LockMember),
// which holds fewer than max rows of table (its endpoints, its addresses),
// else ErrLimit: the count and the insert that follows cannot interleave
// with another writer's.
func (k *Kit) MemberWithin(ctx context.Context, tx DB, table string, memberID int64, max int) (string, error) {
	name, err := k.LockMember(ctx, tx, memberID)
	if err != nil {
		return "", err
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE member_id = ?`, memberID).Scan(&n); err != nil {
		return "", err
	}
	if n >= max {
		return "", fmt.Errorf("%w: %d in %s", certorder.ErrLimit, n, table)
	}
	return name, nil
}

// AddNoticeAddress stores a new address of the member, within max, and
// queues the confirmation of one not confirmed, within the blocks and the
// confirmations' budget (AdmitNoticeAddress), whose counts the adds take
// turns at (LockConfirmations).
func (k *Kit) AddNoticeAddress(ctx context.Context, memberID int64, a certorder.NoticeAddress, max int) (certorder.NoticeAddress, error) {
	if a.CreatedAt.IsZero() {
		a.CreatedAt = time.Now()
	}
	a.CreatedAt = a.CreatedAt.UTC().Truncate(time.Microsecond)
	err := k.Write.InTx(ctx, func(tx DB) error {
		name, err := k.MemberWithin(ctx, tx, "notice_addresses", memberID, max)
		if err != nil {
			return err
		}
		a.MemberID, a.Member = memberID, name
		err = tx.QueryRow(ctx, `INSERT INTO notice_addresses (member_id, address, lang, event_types, secret, created_at, confirmed_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, memberID, a.Address, a.Lang, strings.Join(a.EventTypes, ","),
			a.Secret, a.CreatedAt, NullTime(a.ConfirmedAt)).Scan(&a.ID)
		if err != nil {
			return err
		}
		if a.ConfirmedAt.IsZero() && k.LockConfirmations != "" {
			if _, err := tx.Exec(ctx, k.LockConfirmations); err != nil {
				return err
			}
		}
		if err := AdmitNoticeAddress(ctx, tx, a); err != nil || !a.ConfirmedAt.IsZero() {
			return err
		}
		_, err = InsertJob(ctx, tx, queue.Job{Kind: queue.KindNoticeConfirm, MemberID: memberID, SubjectID: a.ID}, a.CreatedAt)
		return err
	})
	return a, k.Wrap("add notice address", err)
}

// MemberNoticeAddress returns one of the member's addresses.
func (k *Kit) MemberNoticeAddress(ctx context.Context, memberID, id int64) (certorder.NoticeAddress, error) {
	return k.findNoticeAddress(ctx, id, `a.id = ? AND a.member_id = ?`, id, memberID)
}

// FindNoticeAddress returns an address by its ID.
func (k *Kit) FindNoticeAddress(ctx context.Context, id int64) (certorder.NoticeAddress, error) {
	return k.findNoticeAddress(ctx, id, `a.id = ?`, id)
}

func (k *Kit) findNoticeAddress(ctx context.Context, id int64, where string, args ...any) (certorder.NoticeAddress, error) {
	a, err := scanNoticeAddress(k.Read.QueryRow(ctx, `SELECT `+noticeAddressColumns+` FROM notice_addresses a
		JOIN members m ON m.id = a.member_id WHERE `+where, args...))
	return a, k.Wrap("find notice address", notFound(err, fmt.Sprintf("notice address %d", id)))
}

// SetMemberNoticeAddress changes one of the member's addresses.
func (k *Kit) SetMemberNoticeAddress(ctx context.Context, memberID, id int64, lang string, events []string) error {
	n, err := k.Write.Exec(ctx, `UPDATE notice_addresses SET lang = ?, event_types = ? WHERE id = ? AND member_id = ?`,
		lang, strings.Join(events, ","), id, memberID)
	return k.Wrap("set notice address", oneRow(n, err, fmt.Sprintf("notice address %d", id)))
}

// DeleteMemberNoticeAddress deletes one of the member's addresses and its messages.
func (k *Kit) DeleteMemberNoticeAddress(ctx context.Context, memberID, id int64) error {
	return k.Wrap("delete notice address", k.Write.InTx(ctx, func(tx DB) error {
		n, err := tx.Exec(ctx, `DELETE FROM notice_addresses WHERE id = ? AND member_id = ?`, id, memberID)
		if err := oneRow(n, err, fmt.Sprintf("notice address %d", id)); err != nil {
			return err
		}
		return k.DeleteJobs(ctx, tx, id, queue.NoticeKinds...)
	}))
}

// ConfirmNoticeAddress confirms an address, once.
func (k *Kit) ConfirmNoticeAddress(ctx context.Context, id int64, at time.Time) error {
	return k.Wrap("confirm notice address", k.Write.InTx(ctx, func(tx DB) error {
		n, err := tx.Exec(ctx, `UPDATE notice_addresses SET confirmed_at = ? WHERE id = ? AND confirmed_at IS NULL`, at, id)
		if err := oneRow(n, err, fmt.Sprintf("notice address %d", id)); !errors.Is(err, certorder.ErrNotFound) {
			return err
		}
		var count int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM notice_addresses WHERE id = ?`, id).Scan(&count); err != nil || count == 0 {
			return cmp.Or(err, fmt.Errorf("%w: notice address %d", certorder.ErrNotFound, id))
		}
		return fmt.Errorf("%w: notice address %d is confirmed already", certorder.ErrConflict, id)
	}))
}

// UnsubscribeNoticeAddress stops the messages to an address.
func (k *Kit) UnsubscribeNoticeAddress(ctx context.Context, id int64, at time.Time) error {
	n, err := k.Write.Exec(ctx, `UPDATE notice_addresses SET unsubscribed_at = COALESCE(unsubscribed_at, ?) WHERE id = ?`, at, id)
	return k.Wrap("unsubscribe notice address", oneRow(n, err, fmt.Sprintf("notice address %d", id)))
}

// QueueNotices queues the jobs plan makes of the events not yet queued for
// notices, one for each active address of the event's member that wants it.
func (k *Kit) QueueNotices(ctx context.Context, limit int, at time.Time,
	plan func(ev certorder.Event, a certorder.NoticeAddress, today int) (queue.Job, bool)) (taken, queued int, err error) {
	err = k.Write.InTx(ctx, func(tx DB) error {
		taken, queued = 0, 0
		events, err := k.takeEvents(ctx, tx, "noticed", limit)
		if err != nil {
			return err
		}
		for _, ev := range events {
			addrs, err := k.NoticeTargets(ctx, tx, ev)
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
			if _, err := tx.Exec(ctx, `UPDATE webhook_events SET noticed = true WHERE id = ?`, ev.ID); err != nil {
				return err
			}
			taken++
		}
		return nil
	})
	return taken, queued, k.Wrap("queue notices", err)
}

// queueNotice queues the job plan makes of one event for an address,
// told how many events the address was sent one by one on at's day (UTC),
// with the event it tells.
func queueNotice(ctx context.Context, tx DB, a certorder.NoticeAddress, ev certorder.Event, at time.Time,
	plan func(certorder.Event, certorder.NoticeAddress, int) (queue.Job, bool)) (bool, error) {
	day := at.UTC().Truncate(24 * time.Hour)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE subject_id = ? AND kind = ? AND created_at >= ? AND created_at < ?`,
		a.ID, queue.KindNoticeEvent, day, day.Add(24*time.Hour)).Scan(&n); err != nil {
		return false, err
	}
	j, ok := plan(ev, a, n)
	if !ok {
		return false, nil
	}
	id, err := InsertJob(ctx, tx, j, at)
	if err != nil {
		return false, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO notice_events (job_id, type, data, at) VALUES (?, ?, ?, ?)`, id, ev.Type, string(ev.Data), ev.At)
	return true, err
}

// ScanEvent scans an event's id, member_id, type, data and at, then more.
func ScanEvent(row Row, more ...any) (certorder.Event, error) {
	var e certorder.Event
	var data string
	var at Time
	err := row.Scan(append([]any{&e.ID, &e.MemberID, &e.Type, &data, &at}, more...)...)
	e.Data, e.At = []byte(data), at.T
	return e, err
}

// NoticeEvents returns the first limit events a notice tells, oldest
// first, and how many it tells.
func (k *Kit) NoticeEvents(ctx context.Context, jobID int64, limit int) ([]certorder.Event, int, error) {
	total := 0
	evs, err := Query(ctx, k.Read, func(row Row) (certorder.Event, error) {
		e, err := ScanEvent(row, &total)
		e.ID = 0
		return e, err
	}, `SELECT 0, j.member_id, e.type, e.data, e.at, count(*) OVER () FROM notice_events e
		JOIN jobs j ON j.id = e.job_id WHERE e.job_id = ? ORDER BY e.id LIMIT ?`, jobID, limit)
	return evs, total, k.Wrap("notice events", err)
}
