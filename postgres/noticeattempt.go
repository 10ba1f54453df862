package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
)

// recordAttempt records an attempt's outcome on its address (FinishNotice):
// a success clears every failure; a permanent failure is the member's to
// see (its kind) and the operator's (its words), and ends the retry; a
// temporary one is the operator's, with when it is tried again.
func recordAttempt(ctx context.Context, tx pgx.Tx, a certorder.NoticeAttempt) error {
	var err error
	switch {
	case a.State == certorder.DeliveryDelivered:
		_, err = tx.Exec(ctx, `UPDATE notice_addresses SET last_sent = $1, failed_at = NULL, failure = '', failure_kind = '',
			retry_failed_at = NULL, retry_failure = '', retry_at = NULL WHERE id = $2`, a.At, a.AddressID)
	case a.Permanent:
		_, err = tx.Exec(ctx, `UPDATE notice_addresses SET failed_at = $1, failure = $2, failure_kind = $3,
			retry_failed_at = NULL, retry_failure = '', retry_at = NULL WHERE id = $4`, a.At, a.Error, a.FailureKind, a.AddressID)
	case a.State == certorder.DeliveryPending && a.Error != "":
		_, err = tx.Exec(ctx, `UPDATE notice_addresses SET retry_failed_at = $1, retry_failure = $2, retry_at = $3 WHERE id = $4`,
			a.At, a.Error, a.NextAttempt, a.AddressID)
	}
	return err
}
