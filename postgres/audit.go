package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/auditseg"
)

// AppendAudit adds entries to the audit trail as one segment, and when
// their keys were last used, in one transaction.
func (s *Store) AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	seg, oldest, newest := auditseg.Encode(entries)
	return s.wrap("append audit", s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO audit_segments (first_at, last_at, entries, data) VALUES ($1, $2, $3, $4)`,
			oldest.UnixMicro(), newest.UnixMicro(), len(entries), seg); err != nil {
			return err
		}
		for id, at := range auditseg.LastUses(entries) {
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

// Audit lists audit entries, newest first: those of the segments whose
// time range reaches q.Since, and those of the table of one row per entry
// written before segments.
func (s *Store) Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	var limit *int
	if q.Limit > 0 {
		limit = &q.Limit
	}
	rows, _ := s.pool.Query(ctx, `SELECT at, member, key_id, action, order_id, outcome, client_ip, count FROM audit_log
		WHERE ($1 = '' OR member = $1) AND at >= $2 ORDER BY at DESC, id DESC LIMIT $3`, q.Member, q.Since, limit)
	legacy, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.AuditEntry, error) {
		var e certorder.AuditEntry
		err := row.Scan(&e.Time, &e.Member, &e.KeyID, &e.Action, &e.OrderID, &e.Outcome, &e.ClientIP, &e.Count)
		return e, err
	})
	if err != nil {
		return nil, s.wrap("audit", err)
	}
	rows, _ = s.pool.Query(ctx, `SELECT data FROM audit_segments WHERE last_at >= $1 ORDER BY id`, auditseg.CeilMicro(q.Since))
	defer rows.Close()
	es, err := auditseg.Query(q, legacy, auditseg.Data(rows))
	return es, s.wrap("audit", err)
}

// PruneAudit deletes entries older than before: whole segments, the older
// entries of a segment that straddles it, and old rows of the legacy table.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM audit_log WHERE at < $1`, before)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		cut := auditseg.CeilMicro(before)
		var whole int64
		if err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM audit_segments WHERE last_at < $1 RETURNING entries)
			SELECT COALESCE(SUM(entries), 0) FROM gone`, cut).Scan(&whole); err != nil {
			return err
		}
		n += whole
		rows, _ := tx.Query(ctx, `SELECT id, data FROM audit_segments WHERE first_at < $1 AND last_at >= $1 FOR UPDATE`, cut)
		type segment struct {
			id   int64
			data []byte
		}
		straddling, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (segment, error) {
			var sg segment
			err := row.Scan(&sg.id, &sg.data)
			return sg, err
		})
		if err != nil {
			return err
		}
		for _, sg := range straddling {
			kept, dropped, err := auditseg.Prune(sg.data, before)
			if err != nil {
				return err
			}
			n += int64(dropped)
			oldest, _, err := auditseg.Bounds(kept)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE audit_segments SET first_at = $1, entries = entries - $2, data = $3 WHERE id = $4`,
				oldest.UnixMicro(), dropped, kept, sg.id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, s.wrap("prune audit", err)
	}
	return n, nil
}
