package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
)

// AppendAudit adds entries to the audit trail (one COPY), and when their
// keys were last used, in one transaction.
func (s *Store) AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		e = e.Trimmed()
		rows[i] = []any{e.Time, e.Member, e.KeyID, e.Action, e.OrderID, e.Outcome, e.ClientIP, max(e.Count, 1)}
	}
	return s.wrap("append audit", s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"audit_log"},
			[]string{"at", "member", "key_id", "action", "order_id", "outcome", "client_ip", "count"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		for id, at := range certorder.LastUses(entries) {
			if _, err := tx.Exec(ctx, `INSERT INTO key_usage (key_id, last_used) VALUES ($1, $2)
				ON CONFLICT (key_id) DO UPDATE SET last_used = GREATEST(key_usage.last_used, excluded.last_used)`, id, at); err != nil {
				return err
			}
		}
		return nil
	}))
}

// KeysLastUsed says when each key last authenticated a call.
func (s *Store) KeysLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error) {
	rows, _ := s.pool.Query(ctx, `SELECT key_id, last_used FROM key_usage WHERE key_id = ANY($1)`, keyIDs)
	last := map[string]time.Time{}
	var id string
	var at time.Time
	_, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error {
		last[id] = at
		return nil
	})
	return last, s.wrap("keys last used", err)
}

// Audit lists audit entries, newest first.
func (s *Store) Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	var limit *int
	if q.Limit > 0 {
		limit = &q.Limit
	}
	rows, _ := s.pool.Query(ctx, `SELECT at, member, key_id, action, order_id, outcome, client_ip, count FROM audit_log
		WHERE ($1 = '' OR member = $1) AND at >= $2 ORDER BY at DESC, id DESC LIMIT $3`, q.Member, q.Since, limit)
	es, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.AuditEntry, error) {
		var e certorder.AuditEntry
		err := row.Scan(&e.Time, &e.Member, &e.KeyID, &e.Action, &e.OrderID, &e.Outcome, &e.ClientIP, &e.Count)
		return e, err
	})
	return es, s.wrap("audit", err)
}

// PruneAudit deletes entries older than before.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM audit_log WHERE at < $1`, before)
	return tag.RowsAffected(), s.wrap("prune audit", err)
}
