package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

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
	return s.wrap("append audit", inTx(ctx, s.audit, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_segments (first_at, last_at, entries, data) VALUES (?, ?, ?, ?)`,
			oldest.UnixMicro(), newest.UnixMicro(), len(entries), seg); err != nil {
			return err
		}
		for id, at := range auditseg.LastUses(entries) {
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

// Audit lists audit entries, newest first: those of the segments whose
// time range reaches q.Since, and those of the table of one row per entry
// written before segments.
func (s *Store) Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	legacy, err := s.legacyAudit(ctx, q)
	if err != nil {
		return nil, s.wrap("audit", err)
	}
	rows, err := s.audit.QueryContext(ctx, `SELECT data FROM audit_segments WHERE last_at >= ? ORDER BY id`, auditseg.CeilMicro(q.Since))
	if err != nil {
		return nil, s.wrap("audit", err)
	}
	defer rows.Close()
	es, err := auditseg.Query(q, legacy, auditseg.Data(rows))
	return es, s.wrap("audit", err)
}

// legacyAudit reads the entries of the table of one row per entry.
func (s *Store) legacyAudit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.audit.QueryContext(ctx, `SELECT at, member, key_id, action, order_id, outcome, client_ip, count FROM audit_log
		WHERE (? = '' OR member = ?) AND at >= ? ORDER BY at DESC, id DESC LIMIT ?`,
		q.Member, q.Member, formatTime(q.Since), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var es []certorder.AuditEntry
	for rows.Next() {
		var e certorder.AuditEntry
		var at sql.NullString
		if err := rows.Scan(&at, &e.Member, &e.KeyID, &e.Action, &e.OrderID, &e.Outcome, &e.ClientIP, &e.Count); err != nil {
			return nil, err
		}
		e.Time = parseTime(at)
		es = append(es, e)
	}
	return es, rows.Err()
}

// PruneAudit deletes entries older than before: whole segments, the older
// entries of a segment that straddles it, and old rows of the legacy table.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := inTx(ctx, s.audit, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM audit_log WHERE at < ?`, formatTime(before))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		cut := auditseg.CeilMicro(before)
		var whole int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(entries), 0) FROM audit_segments WHERE last_at < ?`, cut).
			Scan(&whole); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM audit_segments WHERE last_at < ?`, cut); err != nil {
			return err
		}
		n += whole
		straddling, err := collect(tx.QueryContext(ctx, `SELECT id, data FROM audit_segments WHERE first_at < ? AND last_at >= ?`, cut, cut))
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
			if _, err := tx.ExecContext(ctx, `UPDATE audit_segments SET first_at = ?, entries = entries - ?, data = ? WHERE id = ?`,
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

type segmentRow struct {
	id   int64
	data []byte
}

func collect(rows *sql.Rows, err error) ([]segmentRow, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var sgs []segmentRow
	for rows.Next() {
		var sg segmentRow
		if err := rows.Scan(&sg.id, &sg.data); err != nil {
			return nil, err
		}
		sgs = append(sgs, sg)
	}
	return sgs, rows.Err()
}
