package storekit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certorder/certorder"
)

// The confirmations' record and the blocks (certorder.NoticeRecipient):
// what both stores write alike. A store makes the adds that count take
// turns its own way (SQLite: its one writer; PostgreSQL: an advisory lock).

// AdmitNoticeAddress applies the blocks and the confirmation budget to
// address a, being added in tx by a.MemberID at a.CreatedAt, and records
// its confirmation when it is to get one (not confirmed yet).
func AdmitNoticeAddress(ctx context.Context, tx DB, a certorder.NoticeAddress) error {
	recipient := certorder.NoticeRecipient(a.Address)
	var since Time
	err := tx.QueryRow(ctx, `SELECT blocked_at FROM notice_blocks WHERE recipient = ?`, recipient).Scan(&since)
	if err == nil {
		return &certorder.BlockedError{Recipient: recipient, Since: since.T}
	}
	if !errors.Is(err, ErrNoRows) {
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
		var oldest Time
		if err := tx.QueryRow(ctx, `SELECT count(*), min(sent_at) FROM notice_confirmations
			WHERE `+b.column+` = ? AND sent_at > ?`, b.key, from).Scan(&n, &oldest); err != nil {
			return err
		}
		if n >= b.limit {
			return &certorder.BudgetError{Budget: b.budget, Limit: b.limit, Until: oldest.T.Add(certorder.ConfirmationWindow)}
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM notice_confirmations WHERE member_id = ? AND sent_at < ?`,
		a.MemberID, a.CreatedAt.Add(-certorder.ConfirmationsKept)); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO notice_confirmations (address_id, member_id, recipient, address, secret, sent_at)
		VALUES (?, ?, ?, ?, ?, ?)`, a.ID, a.MemberID, recipient, a.Address, a.Secret, a.CreatedAt)
	return err
}

// NoticeConfirmations are the recorded confirmations to address id, newest first.
func (k *Kit) NoticeConfirmations(ctx context.Context, addressID int64) ([]certorder.NoticeConfirmation, error) {
	cs, err := Query(ctx, k.Read, func(row Row) (certorder.NoticeConfirmation, error) {
		var c certorder.NoticeConfirmation
		var at Time
		err := row.Scan(&c.AddressID, &c.MemberID, &c.Member, &c.Address, &c.Secret, &at)
		c.SentAt = at.T
		return c, err
	}, `SELECT c.address_id, c.member_id, m.name, c.address, c.secret, c.sent_at
		FROM notice_confirmations c JOIN members m ON m.id = c.member_id WHERE c.address_id = ? ORDER BY c.id DESC`, addressID)
	return cs, k.Wrap("read notice confirmations", err)
}

// BlockNoticeRecipient refuses the recipient's later addresses.
func (k *Kit) BlockNoticeRecipient(ctx context.Context, recipient string, at time.Time) error {
	_, err := k.Write.Exec(ctx, `INSERT INTO notice_blocks (recipient, blocked_at) VALUES (?, ?)
		ON CONFLICT (recipient) DO NOTHING`, recipient, at)
	return k.Wrap("block notice recipient", err)
}

// UnblockNoticeRecipient lifts a block.
func (k *Kit) UnblockNoticeRecipient(ctx context.Context, recipient string) error {
	n, err := k.Write.Exec(ctx, `DELETE FROM notice_blocks WHERE recipient = ?`, recipient)
	return k.Wrap("unblock notice recipient", oneRow(n, err, fmt.Sprintf("block of %s", recipient)))
}

// RecordNoticeAttempt records on an address how a message to it went: a
// success clears every failure; a permanent failure is the member's to see
// (its kind) and the operator's (its words), and ends the retry; a
// temporary one is the operator's, with when it is tried again.
func (k *Kit) RecordNoticeAttempt(ctx context.Context, id int64, a NoticeAttempt) error {
	var err error
	switch {
	case a.Sent:
		_, err = k.Write.Exec(ctx, `UPDATE notice_addresses SET last_sent = ?, failed_at = NULL, failure = '', failure_kind = '',
			retry_failed_at = NULL, retry_failure = '', retry_at = NULL WHERE id = ?`, a.At, id)
	case a.Failure != "" && a.RetryAt.IsZero():
		_, err = k.Write.Exec(ctx, `UPDATE notice_addresses SET failed_at = ?, failure = ?, failure_kind = ?,
			retry_failed_at = NULL, retry_failure = '', retry_at = NULL WHERE id = ?`, a.At, a.Failure, a.FailureKind, id)
	case a.Failure != "":
		_, err = k.Write.Exec(ctx, `UPDATE notice_addresses SET retry_failed_at = ?, retry_failure = ?, retry_at = ? WHERE id = ?`,
			a.At, a.Failure, a.RetryAt, id)
	}
	return k.Wrap("record notice attempt", err)
}
