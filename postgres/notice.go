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
)

// E-mail notices: members' addresses and the outbox of messages to them.
// Instances share the work as the webhooks': FOR UPDATE SKIP LOCKED gives
// each event and each due message to one of them.

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
		if err := admitNoticeAddress(ctx, tx, a); err != nil || !a.ConfirmedAt.IsZero() {
			return err
		}
		_, err = insertNotice(ctx, tx, a.ID, certorder.NoticeConfirm, a.CreatedAt, a.CreatedAt)
		return err
	})
	return a, s.wrap("add notice address", err)
}

// insertNotice queues a message of kind to an address, due at due.
func insertNotice(ctx context.Context, tx pgx.Tx, addressID int64, kind string, at, due time.Time) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO notice_messages (address_id, kind, day, state, next_attempt, created_at)
		VALUES ($1, $2, $3, 'pending', $4, $5) RETURNING id`, addressID, kind, at.UTC().Format(certorder.DateLayout), due, at).Scan(&id)
	return id, err
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM notice_addresses WHERE id = $1 AND member_id = $2`, id, memberID)
	return s.wrap("delete notice address", oneRow(tag, err, fmt.Sprintf("notice address %d", id)))
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

// QueueNotices queues the events not yet queued for the addresses that want them.
func (s *Store) QueueNotices(ctx context.Context, limit int, at time.Time, maxAge time.Duration) (taken, queued int, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		events, err := outboxEvents(ctx, tx, "noticed", limit)
		if err != nil {
			return err
		}
		for _, ev := range events {
			if !ev.At.Before(at.Add(-maxAge)) {
				// FOR UPDATE: instances queueing for one address take turns,
				// so that its day's count holds.
				rows, _ := tx.Query(ctx, `SELECT id FROM notice_addresses WHERE member_id = $1
					AND confirmed_at IS NOT NULL AND unsubscribed_at IS NULL
					AND (event_types = '' OR $2 = ANY(string_to_array(event_types, ','))) ORDER BY id FOR UPDATE`, ev.MemberID, ev.Type)
				ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
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

// queueNotice queues one event for an address: a message of its own while
// the address has had fewer than NoticeDailyEvents today, else into the
// day's digest, due as the day ends.
func queueNotice(ctx context.Context, tx pgx.Tx, addressID int64, ev certorder.Event, at time.Time) error {
	day := at.UTC().Format(certorder.DateLayout)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM notice_messages WHERE address_id = $1 AND day = $2 AND kind = 'event'`,
		addressID, day).Scan(&n); err != nil {
		return err
	}
	var id int64
	var err error
	if n < certorder.NoticeDailyEvents {
		id, err = insertNotice(ctx, tx, addressID, certorder.NoticeEvent, at, at)
	} else {
		y, m, d := at.UTC().Date()
		err = tx.QueryRow(ctx, `INSERT INTO notice_messages (address_id, kind, day, state, next_attempt, created_at)
			VALUES ($1, 'digest', $2, 'pending', $3, $4)
			ON CONFLICT (address_id, day) WHERE kind = 'digest' DO UPDATE SET kind = excluded.kind RETURNING id`,
			addressID, day, time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC), at).Scan(&id)
	}
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO notice_events (message_id, type, data, at) VALUES ($1, $2, $3, $4)`,
		id, ev.Type, string(ev.Data), ev.At)
	return err
}

const noticeColumns = `n.id, n.kind, n.day, n.state, n.attempts, n.next_attempt, n.created_at, n.last_error`

// ClaimNotices takes due notices with their addresses and events, for
// lease; the condition repeated on n skips a row another instance claimed
// meanwhile, as ClaimDeliveries.
func (s *Store) ClaimNotices(ctx context.Context, at time.Time, lease time.Duration, limit int) ([]certorder.Notice, error) {
	var ns []certorder.Notice
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `WITH pick AS (
				SELECT id FROM notice_messages WHERE state = 'pending' AND next_attempt <= $1
				ORDER BY next_attempt, id LIMIT $3 FOR UPDATE SKIP LOCKED),
			claimed AS (
				UPDATE notice_messages n SET next_attempt = $2 FROM pick
				WHERE n.id = pick.id AND n.state = 'pending' AND n.next_attempt <= $1 RETURNING n.*)
			SELECT `+noticeAddressColumns+`, `+noticeColumns+` FROM claimed n
			JOIN notice_addresses a ON a.id = n.address_id JOIN members m ON m.id = a.member_id ORDER BY n.id`,
			at, at.Add(lease), limit)
		var err error
		ns, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Notice, error) {
			var n certorder.Notice
			var err error
			n.Address, err = scanNoticeAddress(row, &n.ID, &n.Kind, &n.Day, &n.State, &n.Attempts, &n.NextAttempt, &n.CreatedAt, &n.LastError)
			return n, err
		})
		if err != nil || len(ns) == 0 {
			return err
		}
		ids := make([]int64, len(ns))
		byID := map[int64]*certorder.Notice{}
		for i := range ns {
			ids[i], byID[ns[i].ID] = ns[i].ID, &ns[i]
		}
		rows, _ = tx.Query(ctx, `SELECT message_id, type, data, at FROM notice_events WHERE message_id = ANY($1) ORDER BY id`, ids)
		var mid int64
		var e certorder.Event
		var data string
		_, err = pgx.ForEachRow(rows, []any{&mid, &e.Type, &data, &e.At}, func() error {
			n := byID[mid]
			n.Events = append(n.Events, certorder.Event{MemberID: n.Address.MemberID, Type: e.Type, Data: []byte(data), At: e.At})
			return nil
		})
		return err
	})
	return ns, s.wrap("claim notices", err)
}

// FinishNotice records an attempt's outcome, and its address's.
func (s *Store) FinishNotice(ctx context.Context, a certorder.NoticeAttempt) error {
	return s.wrap("finish notice", s.inTx(ctx, func(tx pgx.Tx) error {
		next := a.NextAttempt
		if next.IsZero() {
			next = a.At
		}
		if _, err := tx.Exec(ctx, `UPDATE notice_messages SET state = $1, attempts = attempts + 1, next_attempt = $2,
			last_attempt = $3, last_error = $4 WHERE id = $5`, a.State, next, a.At, a.Error, a.NoticeID); err != nil {
			return err
		}
		return recordAttempt(ctx, tx, a)
	}))
}

// PruneNotices deletes the notices finished before before.
func (s *Store) PruneNotices(ctx context.Context, before time.Time) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM notice_messages WHERE state <> 'pending' AND created_at < $1`, before)
	return s.wrap("prune notices", err)
}
