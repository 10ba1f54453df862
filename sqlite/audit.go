package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/certorder/certorder"
)

// AppendAudit adds entries to the audit trail, in one transaction.
func (s *Store) AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error {
	return s.wrap("append audit", inTx(ctx, s.audit, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO audit_log (at, member, action, order_id, outcome, client_ip)
			VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, e := range entries {
			e = e.Trimmed()
			if _, err := stmt.ExecContext(ctx, formatTime(e.Time), e.Member, e.Action, e.OrderID, e.Outcome, e.ClientIP); err != nil {
				return err
			}
		}
		return nil
	}))
}

// Audit lists audit entries, newest first.
func (s *Store) Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.audit.QueryContext(ctx, `SELECT at, member, action, order_id, outcome, client_ip FROM audit_log
		WHERE (? = '' OR member = ?) AND at >= ? ORDER BY at DESC, id DESC LIMIT ?`,
		q.Member, q.Member, formatTime(q.Since), limit)
	if err != nil {
		return nil, s.wrap("audit", err)
	}
	defer rows.Close()
	var es []certorder.AuditEntry
	for rows.Next() {
		var e certorder.AuditEntry
		var at sql.NullString
		if err := rows.Scan(&at, &e.Member, &e.Action, &e.OrderID, &e.Outcome, &e.ClientIP); err != nil {
			return nil, s.wrap("audit", err)
		}
		e.Time = parseTime(at)
		es = append(es, e)
	}
	return es, s.wrap("audit", rows.Err())
}

// PruneAudit deletes entries older than before.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.audit.ExecContext(ctx, `DELETE FROM audit_log WHERE at < ?`, formatTime(before))
	if err != nil {
		return 0, s.wrap("prune audit", err)
	}
	n, err := res.RowsAffected()
	return n, s.wrap("prune audit", err)
}
