package sqlite

import (
	"context"
	"database/sql"

	"github.com/certorder/certorder"
)

// recordAttempt records an attempt's outcome on its address (FinishNotice):
// a success clears every failure; a permanent failure is the member's to
// see (its kind) and the operator's (its words), and ends the retry; a
// temporary one is the operator's, with when it is tried again.
func recordAttempt(ctx context.Context, tx *sql.Tx, a certorder.NoticeAttempt) error {
	var err error
	switch {
	case a.State == certorder.DeliveryDelivered:
		_, err = tx.ExecContext(ctx, `UPDATE notice_addresses SET last_sent = ?, failed_at = NULL, failure = '', failure_kind = '',
			retry_failed_at = NULL, retry_failure = '', retry_at = NULL WHERE id = ?`, formatTime(a.At), a.AddressID)
	case a.Permanent:
		_, err = tx.ExecContext(ctx, `UPDATE notice_addresses SET failed_at = ?, failure = ?, failure_kind = ?,
			retry_failed_at = NULL, retry_failure = '', retry_at = NULL WHERE id = ?`, formatTime(a.At), a.Error, a.FailureKind, a.AddressID)
	case a.State == certorder.DeliveryPending && a.Error != "":
		_, err = tx.ExecContext(ctx, `UPDATE notice_addresses SET retry_failed_at = ?, retry_failure = ?, retry_at = ? WHERE id = ?`,
			formatTime(a.At), a.Error, formatTime(a.NextAttempt), a.AddressID)
	}
	return err
}
