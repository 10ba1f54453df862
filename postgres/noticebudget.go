package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
)

// The confirmations' record and the blocks (certorder.NoticeRecipientStore).

// admitNoticeAddress applies the blocks and the confirmation budget to
// address a, being added in tx by a.MemberID at a.CreatedAt, and records
// its confirmation when it is to get one (not confirmed yet). The budget
// of a recipient counts across members, so the adds that count take turns
// (lockConfirmations) until their transactions end.
func admitNoticeAddress(ctx context.Context, tx pgx.Tx, a certorder.NoticeAddress) error {
	recipient := certorder.NoticeRecipient(a.Address)
	if a.ConfirmedAt.IsZero() {
		if err := lockTx(ctx, tx, lockConfirmations); err != nil {
			return err
		}
	}
	var since time.Time
	err := tx.QueryRow(ctx, `SELECT blocked_at FROM notice_blocks WHERE recipient = $1`, recipient).Scan(&since)
	if err == nil {
		return &certorder.BlockedError{Recipient: recipient, Since: since}
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if !a.ConfirmedAt.IsZero() {
		return nil // the operator's: no confirmation
	}
	from := a.CreatedAt.Add(-certorder.ConfirmationWindow)
	for _, b := range []struct {
		budget, column string
		key            any
		limit          int
	}{
		{certorder.BudgetRecipient, "recipient", recipient, certorder.ConfirmationsPerRecipient},
		{certorder.BudgetMember, "member_id", a.MemberID, certorder.ConfirmationsPerMember},
	} {
		var n int
		var oldest *time.Time
		if err := tx.QueryRow(ctx, `SELECT count(*), min(sent_at) FROM notice_confirmations
			WHERE `+b.column+` = $1 AND sent_at > $2`, b.key, from).Scan(&n, &oldest); err != nil {
			return err
		}
		if n >= b.limit {
			return &certorder.BudgetError{Budget: b.budget, Limit: b.limit, Until: deref(oldest).Add(certorder.ConfirmationWindow)}
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM notice_confirmations WHERE member_id = $1 AND sent_at < $2`,
		a.MemberID, a.CreatedAt.Add(-certorder.ConfirmationsKept)); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO notice_confirmations (address_id, member_id, recipient, address, secret, sent_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, a.ID, a.MemberID, recipient, a.Address, a.Secret, a.CreatedAt)
	return err
}

// NoticeConfirmations are the recorded confirmations to address id, newest first.
func (s *Store) NoticeConfirmations(ctx context.Context, addressID int64) ([]certorder.NoticeConfirmation, error) {
	rows, _ := s.pool.Query(ctx, `SELECT c.address_id, c.member_id, m.name, c.address, c.secret, c.sent_at
		FROM notice_confirmations c JOIN members m ON m.id = c.member_id WHERE c.address_id = $1 ORDER BY c.id DESC`, addressID)
	cs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.NoticeConfirmation, error) {
		var c certorder.NoticeConfirmation
		err := row.Scan(&c.AddressID, &c.MemberID, &c.Member, &c.Address, &c.Secret, &c.SentAt)
		return c, err
	})
	return cs, s.wrap("read notice confirmations", err)
}

// BlockNoticeRecipient refuses the recipient's later addresses.
func (s *Store) BlockNoticeRecipient(ctx context.Context, recipient string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO notice_blocks (recipient, blocked_at) VALUES ($1, $2)
		ON CONFLICT (recipient) DO NOTHING`, recipient, at)
	return s.wrap("block notice recipient", err)
}

// UnblockNoticeRecipient lifts a block.
func (s *Store) UnblockNoticeRecipient(ctx context.Context, recipient string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM notice_blocks WHERE recipient = $1`, recipient)
	return s.wrap("unblock notice recipient", oneRow(tag, err, fmt.Sprintf("block of %s", recipient)))
}
