package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
)

// AppendAudit adds entries to the audit trail, in one round trip.
func (s *Store) AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		e = e.Trimmed()
		rows[i] = []any{e.Time, e.Member, e.Action, e.OrderID, e.Outcome, e.ClientIP}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"audit_log"},
		[]string{"at", "member", "action", "order_id", "outcome", "client_ip"}, pgx.CopyFromRows(rows))
	return s.wrap("append audit", err)
}

// Audit lists audit entries, newest first.
func (s *Store) Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	var limit *int
	if q.Limit > 0 {
		limit = &q.Limit
	}
	rows, _ := s.pool.Query(ctx, `SELECT at, member, action, order_id, outcome, client_ip FROM audit_log
		WHERE ($1 = '' OR member = $1) AND at >= $2 ORDER BY at DESC, id DESC LIMIT $3`, q.Member, q.Since, limit)
	es, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.AuditEntry, error) {
		var e certorder.AuditEntry
		err := row.Scan(&e.Time, &e.Member, &e.Action, &e.OrderID, &e.Outcome, &e.ClientIP)
		return e, err
	})
	return es, s.wrap("audit", err)
}

// PruneAudit deletes entries older than before.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM audit_log WHERE at < $1`, before)
	return tag.RowsAffected(), s.wrap("prune audit", err)
}
