package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/certorder/certorder"
)

// AppendAudit adds entries to the audit trail, and when their keys were
// last used, in one transaction.
func (s *Store) AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error {
	return s.wrap("append audit", inTx(ctx, s.audit, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO audit_log (at, member, key_id, action, order_id, outcome, client_ip, count)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, e := range entries {
			e = e.Trimmed()
			if _, err := stmt.ExecContext(ctx, formatTime(e.Time), e.Member, e.KeyID, e.Action, e.OrderID, e.Outcome,
				e.ClientIP, max(e.Count, 1)); err != nil {
				return err
			}
		}
		for id, at := range certorder.LastUses(entries) {
			if _, err := tx.ExecContext(ctx, `INSERT INTO key_usage (key_id, last_used) VALUES (?, ?)
				ON CONFLICT (key_id) DO UPDATE SET last_used = max(last_used, excluded.last_used)`, id, formatTime(at)); err != nil {
				return err
			}
		}
		return nil
	}))
}

// KeysLastUsed says when each key last authenticated a call.
func (s *Store) KeysLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error) {
	last := map[string]time.Time{}
	for _, id := range keyIDs {
		var at sql.NullString
		err := s.audit.QueryRowContext(ctx, `SELECT last_used FROM key_usage WHERE key_id = ?`, id).Scan(&at)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, s.wrap("keys last used", err)
		}
		last[id] = parseTime(at)
	}
	return last, nil
}

// Audit lists audit entries, newest first.
func (s *Store) Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.audit.QueryContext(ctx, `SELECT at, member, key_id, action, order_id, outcome, client_ip, count FROM audit_log
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
		if err := rows.Scan(&at, &e.Member, &e.KeyID, &e.Action, &e.OrderID, &e.Outcome, &e.ClientIP, &e.Count); err != nil {
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
