package postgres

import (
	"context"

	"github.com/certorder/certorder/internal/storekit"
)

// RecordNoticeAttempt records on an address how a message to it went: a
// success clears every failure; a permanent failure is the member's to see
// (its kind) and the operator's (its words), and ends the retry; a
// temporary one is the operator's, with when it is tried again.
func (s *Store) RecordNoticeAttempt(ctx context.Context, id int64, a storekit.NoticeAttempt) error {
	var err error
	switch {
	case a.Sent:
		_, err = s.pool.Exec(ctx, `UPDATE notice_addresses SET last_sent = $1, failed_at = NULL, failure = '', failure_kind = '',
			retry_failed_at = NULL, retry_failure = '', retry_at = NULL WHERE id = $2`, a.At, id)
	case a.Failure != "" && a.RetryAt.IsZero():
		_, err = s.pool.Exec(ctx, `UPDATE notice_addresses SET failed_at = $1, failure = $2, failure_kind = $3,
			retry_failed_at = NULL, retry_failure = '', retry_at = NULL WHERE id = $4`, a.At, a.Failure, a.FailureKind, id)
	case a.Failure != "":
		_, err = s.pool.Exec(ctx, `UPDATE notice_addresses SET retry_failed_at = $1, retry_failure = $2, retry_at = $3 WHERE id = $4`,
			a.At, a.Failure, a.RetryAt, id)
	}
	return s.wrap("record notice attempt", err)
}
