package postgres

import (
	"cmp"
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

// E-mail notices: members' addresses, and the order events queued for
// them (jobs of the notice kinds). Instances share the work as the
// webhooks': FOR UPDATE SKIP LOCKED gives each event to one of them.

const noticeAddressColumns = `a.id, a.member_id, m.name, a.address, a.lang, a.event_types, a.secret, a.created_at,
	a.confirmed_at, a.unsubscribed_at, a.last_sent, a.failed_at, a.failure, a.failure_kind,
	a.retry_failed_at, a.retry_failure, a.retry_at, m.disabled`

func scanNoticeAddress(row pgx.Row, more ...any) (certorder.NoticeAddress, error) {
	var a certorder.NoticeAddress
	var types string
	var confirmed, unsubscribed, sent, failed, retryFailed, retryAt *time.Time
	err := row.Scan(append([]any{&a.ID, &a.MemberID, &a.Member, &a.Address, &a.Lang, &types, &a.Secret, &a.CreatedAt,
		&confirmed, &unsubscribed, &sent, &failed, &a.Failure, &a.FailureKind,
		&retryFailed, &a.RetryFailure, &retryAt, &a.MemberDisabled}, more...)...)
	if types != "" {
		a.EventTypes = strings.Split(types, ",")
	}
	a.ConfirmedAt, a.UnsubscribedAt, a.LastSent, a.FailedAt = deref(confirmed), deref(unsubscribed), deref(sent), deref(failed)
	a.RetryFailedAt, a.RetryAt = deref(retryFailed), deref(retryAt)
	return a, err
}

// NoticeAddresses lists the member's addresses.
func (s *Store) NoticeAddresses(ctx context.Context, memberID int64) ([]certorder.NoticeAddress, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+noticeAddressColumns+` FROM notice_addresses a
		JOIN members m ON m.id = a.member_id WHERE a.member_id = $1 ORDER BY a.id`, memberID)
	as, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.NoticeAddress, error) { return scanNoticeAddress(row) })
	return as, s.wrap("list notice addresses", err)
}

// AddNoticeAddress stores a new address of the member, within max, and
// queues the confirmation of one not confirmed.
func (s *Store) AddNoticeAddress(ctx context.Context, memberID int64, a certorder.NoticeAddress, max int) (certorder.NoticeAddress, error) {
	if a.CreatedAt.IsZero() {
		a.CreatedAt = time.Now()
	}
	a.CreatedAt = a.CreatedAt.UTC().Truncate(time.Microsecond)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		name, err := memberWithin(ctx, tx, "notice_addresses", memberID, max)
		if err != nil {
			return err
		}
		a.MemberID, a.Member = memberID, name
		err = tx.QueryRow(ctx, `INSERT INTO notice_addresses (member_id, address, lang, event_types, secret, created_at, confirmed_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, memberID, a.Address, a.Lang, strings.Join(a.EventTypes, ","),
			a.Secret, a.CreatedAt, nullTime(a.ConfirmedAt)).Scan(&a.ID)
		if err != nil {
			return err
		}
		// The blocks and the confirmations' budget: a recipient's counts
		// across members, so the adds that count take turns
		// (lockConfirmations) until their transactions end.
		if a.ConfirmedAt.IsZero() {
			if err := lockTx(ctx, tx, lockConfirmations); err != nil {
				return err
			}
		}
		if err := storekit.AdmitNoticeAddress(ctx, pgDB{tx}, a); err != nil || !a.ConfirmedAt.IsZero() {
			return err
		}
		_, err = insertJob(ctx, tx, queue.Job{Kind: queue.KindNoticeConfirm, MemberID: memberID, SubjectID: a.ID}, a.CreatedAt)
		return err
	})
	return a, s.wrap("add notice address", err)
}

// MemberNoticeAddress returns one of the member's addresses.
func (s *Store) MemberNoticeAddress(ctx context.Context, memberID, id int64) (certorder.NoticeAddress, error) {
	return s.findNoticeAddress(ctx, `a.id = $1 AND a.member_id = $2`, id, memberID)
}

// FindNoticeAddress returns an address by its ID.
func (s *Store) FindNoticeAddress(ctx context.Context, id int64) (certorder.NoticeAddress, error) {
	return s.findNoticeAddress(ctx, `a.id = $1`, id)
}

func (s *Store) findNoticeAddress(ctx context.Context, where string, args ...any) (certorder.NoticeAddress, error) {
	a, err := scanNoticeAddress(s.pool.QueryRow(ctx, `SELECT `+noticeAddressColumns+` FROM notice_addresses a
		JOIN members m ON m.id = a.member_id WHERE `+where, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("%w: notice address %d", certorder.ErrNotFound, args[0])
	}
	return a, s.wrap("find notice address", err)
}

// SetMemberNoticeAddress changes one of the member's addresses.
func (s *Store) SetMemberNoticeAddress(ctx context.Context, memberID, id int64, lang string, events []string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE notice_addresses SET lang = $1, event_types = $2 WHERE id = $3 AND member_id = $4`,
		lang, strings.Join(events, ","), id, memberID)
	return s.wrap("set notice address", oneRow(tag, err, fmt.Sprintf("notice address %d", id)))
}

// DeleteMemberNoticeAddress deletes one of the member's addresses and its messages.
func (s *Store) DeleteMemberNoticeAddress(ctx context.Context, memberID, id int64) error {
	return s.wrap("delete notice address", s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM notice_addresses WHERE id = $1 AND member_id = $2`, id, memberID)
		if err := oneRow(tag, err, fmt.Sprintf("notice address %d", id)); err != nil {
			return err
		}
		return deleteJobs(ctx, tx, id, queue.NoticeKinds...)
	}))
}

// ConfirmNoticeAddress confirms an address, once.
func (s *Store) ConfirmNoticeAddress(ctx context.Context, id int64, at time.Time) error {
	return s.wrap("confirm notice address", s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE notice_addresses SET confirmed_at = $1 WHERE id = $2 AND confirmed_at IS NULL`, at, id)
		if err := oneRow(tag, err, fmt.Sprintf("notice address %d", id)); !errors.Is(err, certorder.ErrNotFound) {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM notice_addresses WHERE id = $1`, id).Scan(&n); err != nil || n == 0 {
			return cmp.Or(err, fmt.Errorf("%w: notice address %d", certorder.ErrNotFound, id))
		}
		return fmt.Errorf("%w: notice address %d is confirmed already", certorder.ErrConflict, id)
	}))
}

// UnsubscribeNoticeAddress stops the messages to an address.
func (s *Store) UnsubscribeNoticeAddress(ctx context.Context, id int64, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE notice_addresses SET unsubscribed_at = COALESCE(unsubscribed_at, $1) WHERE id = $2`, at, id)
	return s.wrap("unsubscribe notice address", oneRow(tag, err, fmt.Sprintf("notice address %d", id)))
}

// QueueNotices queues the jobs plan makes of the events not yet queued for
// notices, one for each active address of the event's member that wants it.
func (s *Store) QueueNotices(ctx context.Context, limit int, at time.Time,
	plan func(ev certorder.Event, a certorder.NoticeAddress, today int) (queue.Job, bool)) (taken, queued int, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		taken, queued = 0, 0
		events, err := outboxEvents(ctx, tx, "noticed", limit)
		if err != nil {
			return err
		}
		for _, ev := range events {
			// FOR UPDATE: instances queueing for one address take turns,
			// so that its day's count holds.
			rows, _ := tx.Query(ctx, `SELECT id, member_id FROM notice_addresses WHERE member_id = $1
				AND confirmed_at IS NOT NULL AND unsubscribed_at IS NULL
				AND (event_types = '' OR $2 = ANY(string_to_array(event_types, ','))) ORDER BY id FOR UPDATE`, ev.MemberID, ev.Type)
			addrs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.NoticeAddress, error) {
				var a certorder.NoticeAddress
				return a, row.Scan(&a.ID, &a.MemberID)
			})
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
			if _, err := tx.Exec(ctx, `UPDATE webhook_events SET noticed = true WHERE id = $1`, ev.ID); err != nil {
				return err
			}
			taken++
		}
		return nil
	})
	return taken, queued, s.wrap("queue notices", err)
}

// outboxEvents takes up to limit events of the outbox whose flag
// (fanned_out: the webhooks'; noticed: the notices') is not set, oldest
// first; SKIP LOCKED leaves those another instance took to it.
func outboxEvents(ctx context.Context, tx pgx.Tx, flag string, limit int) ([]certorder.Event, error) {
	rows, _ := tx.Query(ctx, `SELECT id, member_id, type, data, at FROM webhook_events
		WHERE NOT `+flag+` ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Event, error) {
		var e certorder.Event
		var data string
		err := row.Scan(&e.ID, &e.MemberID, &e.Type, &data, &e.At)
		e.Data = []byte(data)
		return e, err
	})
}

// memberWithin locks member memberID and returns its name, when it holds
// fewer than max rows of table (its endpoints, its addresses), else
// ErrLimit: the lock makes the count and the insert that follows one step
// that parallel calls cannot interleave.
func memberWithin(ctx context.Context, tx pgx.Tx, table string, memberID int64, max int) (string, error) {
	name, err := lockMember(ctx, tx, memberID)
	if err != nil {
		return "", err
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE member_id = $1`, memberID).Scan(&n); err != nil {
		return "", err
	}
	if n >= max {
		return "", fmt.Errorf("%w: %d in %s", certorder.ErrLimit, n, table)
	}
	return name, nil
}

// queueNotice queues the job plan makes of one event for an address,
// told how many events the address was sent one by one on at's day (UTC),
// with the event it tells.
func queueNotice(ctx context.Context, tx pgx.Tx, a certorder.NoticeAddress, ev certorder.Event, at time.Time,
	plan func(certorder.Event, certorder.NoticeAddress, int) (queue.Job, bool)) (bool, error) {
	day := at.UTC().Truncate(24 * time.Hour)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE subject_id = $1 AND kind = $2 AND created_at >= $3 AND created_at < $4`,
		a.ID, queue.KindNoticeEvent, day, day.Add(24*time.Hour)).Scan(&n); err != nil {
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
	_, err = tx.Exec(ctx, `INSERT INTO notice_events (job_id, type, data, at) VALUES ($1, $2, $3, $4)`, id, ev.Type, string(ev.Data), ev.At)
	return true, err
}

// NoticeEvents returns the first limit events a notice tells, oldest
// first, and how many it tells.
func (s *Store) NoticeEvents(ctx context.Context, jobID int64, limit int) ([]certorder.Event, int, error) {
	rows, _ := s.pool.Query(ctx, `SELECT j.member_id, e.type, e.data, e.at, count(*) OVER () FROM notice_events e
		JOIN jobs j ON j.id = e.job_id WHERE e.job_id = $1 ORDER BY e.id LIMIT $2`, jobID, limit)
	total := 0
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Event, error) {
		var e certorder.Event
		var data string
		err := row.Scan(&e.MemberID, &e.Type, &data, &e.At, &total)
		e.Data = []byte(data)
		return e, err
	})
	return evs, total, s.wrap("notice events", err)
}
