package storekit

import (
	"context"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/auditseg"
)

// The audit trail, as both stores keep it (internal/auditseg's segments,
// and a table of one row per entry written before them).

// AppendAudit adds entries to the audit trail as one segment, and when
// their keys were last used, in one transaction.
func (k *Kit) AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	seg, oldest, newest := auditseg.Encode(entries)
	return k.Wrap("append audit", k.AuditDB.InTx(ctx, func(tx DB) error {
		if _, err := tx.Exec(ctx, `INSERT INTO audit_segments (first_at, last_at, entries, data) VALUES (?, ?, ?, ?)`,
			oldest.UnixMicro(), newest.UnixMicro(), len(entries), seg); err != nil {
			return err
		}
		for id, at := range auditseg.LastUses(entries) {
			if _, err := tx.Exec(ctx, `INSERT INTO key_usage (key_id, last_used) VALUES (?, ?)
				ON CONFLICT (key_id) DO UPDATE SET last_used = `+k.Greatest+`(key_usage.last_used, excluded.last_used)`, id, at); err != nil {
				return err
			}
		}
		return nil
	}))
}

// KeysLastUsed says when each key last authenticated a call.
func (k *Kit) KeysLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error) {
	last := map[string]time.Time{}
	_, err := Query(ctx, k.AuditDB, func(row Row) (struct{}, error) {
		var id string
		var at Time
		err := row.Scan(&id, &at)
		last[id] = at.T
		return struct{}{}, err
	}, `SELECT key_id, last_used FROM key_usage WHERE `+k.InList("key_id"), k.List(keyIDs))
	return last, k.Wrap("keys last used", err)
}

// Audit lists audit entries, newest first: those of the segments whose
// time range reaches q.Since, and those of the table of one row per entry
// written before segments.
func (k *Kit) Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	var limit any = q.Limit
	if q.Limit <= 0 {
		limit = k.NoLimit
	}
	legacy, err := Query(ctx, k.AuditDB, func(row Row) (certorder.AuditEntry, error) {
		var e certorder.AuditEntry
		var at Time
		err := row.Scan(&at, &e.Member, &e.KeyID, &e.Action, &e.OrderID, &e.Outcome, &e.ClientIP, &e.Count)
		e.Time = at.T
		return e, err
	}, `SELECT at, member, key_id, action, order_id, outcome, client_ip, count FROM audit_log
		WHERE (? = '' OR member = ?) AND at >= ? ORDER BY at DESC, id DESC LIMIT ?`, q.Member, q.Member, q.Since, limit)
	if err != nil {
		return nil, k.Wrap("audit", err)
	}
	rows, err := k.AuditDB.Query(ctx, `SELECT data FROM audit_segments WHERE last_at >= ? ORDER BY id`, auditseg.CeilMicro(q.Since))
	if err != nil {
		return nil, k.Wrap("audit", err)
	}
	defer rows.Close()
	es, err := auditseg.Query(q, legacy, auditseg.Data(rows))
	return es, k.Wrap("audit", err)
}

// PruneAudit deletes entries older than before: whole segments, the older
// entries of a segment that straddles it (locked for the transaction where
// the store has row locks), and old rows of the legacy table.
func (k *Kit) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := k.AuditDB.InTx(ctx, func(tx DB) error {
		var err error
		if n, err = tx.Exec(ctx, `DELETE FROM audit_log WHERE at < ?`, before); err != nil {
			return err
		}
		cut := auditseg.CeilMicro(before)
		var whole int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(entries), 0) FROM audit_segments WHERE last_at < ?`, cut).Scan(&whole); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM audit_segments WHERE last_at < ?`, cut); err != nil {
			return err
		}
		n += whole
		type segment struct {
			id   int64
			data []byte
		}
		straddling, err := Query(ctx, tx, func(row Row) (segment, error) {
			var sg segment
			return sg, row.Scan(&sg.id, &sg.data)
		}, `SELECT id, data FROM audit_segments WHERE first_at < ? AND last_at >= ?`+k.ForUpdate, cut, cut)
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
			if _, err := tx.Exec(ctx, `UPDATE audit_segments SET first_at = ?, entries = entries - ?, data = ? WHERE id = ?`,
				oldest.UnixMicro(), dropped, kept, sg.id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, k.Wrap("prune audit", err)
	}
	return n, nil
}
