package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// The confirmations' record and the blocks (certorder.NoticeRecipientStore).
// The write connection is one and its transactions begin IMMEDIATE, so a
// count and the insert after it cannot interleave with another add.

// admitNoticeAddress applies the blocks and the confirmation budget to
// address a, being added in tx by a.MemberID at a.CreatedAt, and records
// its confirmation when it is to get one (not confirmed yet).
func admitNoticeAddress(ctx context.Context, tx *sql.Tx, a certorder.NoticeAddress) error {
	recipient := certorder.NoticeRecipient(a.Address)
	var since sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT blocked_at FROM notice_blocks WHERE recipient = ?`, recipient).Scan(&since)
	if err == nil {
		return &certorder.BlockedError{Recipient: recipient, Since: parseTime(since)}
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if !a.ConfirmedAt.IsZero() {
		return nil // the operator's: no confirmation
	}
	from := formatTime(a.CreatedAt.Add(-certorder.ConfirmationWindow))
	for _, b := range []struct {
		budget, column string
		key            any
		limit          int
	}{
		{certorder.BudgetRecipient, "recipient", recipient, certorder.ConfirmationsPerRecipient},
		{certorder.BudgetMember, "member_id", a.MemberID, certorder.ConfirmationsPerMember},
	} {
		var n int
		var oldest sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT count(*), min(sent_at) FROM notice_confirmations
			WHERE `+b.column+` = ? AND sent_at > ?`, b.key, from).Scan(&n, &oldest); err != nil {
			return err
		}
		if n >= b.limit {
			return &certorder.BudgetError{Budget: b.budget, Limit: b.limit, Until: parseTime(oldest).Add(certorder.ConfirmationWindow)}
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM notice_confirmations WHERE member_id = ? AND sent_at < ?`,
		a.MemberID, formatTime(a.CreatedAt.Add(-certorder.ConfirmationsKept))); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO notice_confirmations (address_id, member_id, recipient, address, secret, sent_at)
		VALUES (?, ?, ?, ?, ?, ?)`, a.ID, a.MemberID, recipient, a.Address, a.Secret, formatTime(a.CreatedAt))
	return err
}

// NoticeConfirmations are the recorded confirmations to address id, newest first.
func (s *Store) NoticeConfirmations(ctx context.Context, addressID int64) ([]certorder.NoticeConfirmation, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT c.address_id, c.member_id, m.name, c.address, c.secret, c.sent_at
		FROM notice_confirmations c JOIN members m ON m.id = c.member_id WHERE c.address_id = ? ORDER BY c.id DESC`, addressID)
	if err != nil {
		return nil, s.wrap("read notice confirmations", err)
	}
	defer rows.Close()
	cs, err := storekit.Collect(rows, func(row storekit.Row) (certorder.NoticeConfirmation, error) {
		var c certorder.NoticeConfirmation
		var at sql.NullString
		err := row.Scan(&c.AddressID, &c.MemberID, &c.Member, &c.Address, &c.Secret, &at)
		c.SentAt = parseTime(at)
		return c, err
	})
	return cs, s.wrap("read notice confirmations", err)
}

// BlockNoticeRecipient refuses the recipient's later addresses.
func (s *Store) BlockNoticeRecipient(ctx context.Context, recipient string, at time.Time) error {
	_, err := s.write.ExecContext(ctx, `INSERT INTO notice_blocks (recipient, blocked_at) VALUES (?, ?)
		ON CONFLICT (recipient) DO NOTHING`, recipient, formatTime(at))
	return s.wrap("block notice recipient", err)
}

// UnblockNoticeRecipient lifts a block.
func (s *Store) UnblockNoticeRecipient(ctx context.Context, recipient string) error {
	res, err := s.write.ExecContext(ctx, `DELETE FROM notice_blocks WHERE recipient = ?`, recipient)
	return s.wrap("unblock notice recipient", oneRow(res, err, fmt.Sprintf("block of %s", recipient)))
}
