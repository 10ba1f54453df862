package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gofrs/flock"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// LinkContainer ties a member to a division.
func (s *Store) LinkContainer(ctx context.Context, member string, container int64) error {
	if container <= 0 {
		return fmt.Errorf("%w: division %d is not a positive number", certorder.ErrInvalid, container)
	}
	return s.wrap("link division", inTx(ctx, s.write, func(tx *sql.Tx) error {
		mid, err := storekit.MemberID(ctx, sqlDB{q: tx}, member)
		if err != nil {
			return err
		}
		var owner int64
		err = tx.QueryRowContext(ctx, `SELECT member_id FROM container_links WHERE container_id = ?`, container).Scan(&owner)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO container_links (container_id, member_id, created_at) VALUES (?, ?, ?)`,
				container, mid, now())
			return err
		case err != nil:
			return err
		case owner != mid:
			return fmt.Errorf("%w: division %d is linked to another member", certorder.ErrConflict, container)
		}
		return nil
	}))
}

// UnlinkContainer removes a link.
func (s *Store) UnlinkContainer(ctx context.Context, member string, container int64) error {
	return s.wrap("unlink division", inTx(ctx, s.write, func(tx *sql.Tx) error {
		mid, err := storekit.MemberID(ctx, sqlDB{q: tx}, member)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM container_links WHERE container_id = ? AND member_id = ?`, container, mid)
		return oneRow(res, err, fmt.Sprintf("division %d is not linked to member %s", container, member))
	}))
}

// ContainerLinks lists every link.
func (s *Store) ContainerLinks(ctx context.Context) ([]certorder.ContainerLink, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT l.container_id, l.member_id, m.name, l.created_at
		FROM container_links l JOIN members m ON m.id = l.member_id ORDER BY m.name, l.container_id`)
	if err != nil {
		return nil, s.wrap("division links", err)
	}
	defer rows.Close()
	var links []certorder.ContainerLink
	for rows.Next() {
		var l certorder.ContainerLink
		var created sql.NullString
		if err := rows.Scan(&l.Container, &l.MemberID, &l.Member, &created); err != nil {
			return nil, s.wrap("division links", err)
		}
		l.CreatedAt = parseTime(created)
		links = append(links, l)
	}
	return links, s.wrap("division links", rows.Err())
}

// KnownOrders returns what the store holds of the orders.
func (s *Store) KnownOrders(ctx context.Context, ids []int64) (map[int64]storekit.KnownOrder, error) {
	known := map[int64]storekit.KnownOrder{}
	if len(ids) == 0 {
		return known, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.read.QueryContext(ctx, `
		SELECT id, member_id, 0, status, valid_till, COALESCE(renewed_by, 0) FROM orders
		WHERE id IN (SELECT value FROM json_each(?))
		UNION ALL
		SELECT id, 0, container_id, status, valid_till, COALESCE(renewed_by, 0) FROM unassigned_orders
		WHERE id IN (SELECT value FROM json_each(?)) AND id NOT IN (SELECT id FROM orders)`, string(list), string(list))
	if err != nil {
		return nil, s.wrap("known orders", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var k storekit.KnownOrder
		if err := rows.Scan(&id, &k.MemberID, &k.Container, &k.Status, &k.ValidTill, &k.RenewedBy); err != nil {
			return nil, s.wrap("known orders", err)
		}
		known[id] = k
	}
	return known, s.wrap("known orders", rows.Err())
}

// InSyncTx runs fn in one write transaction (see storekit.SyncStore).
func (s *Store) InSyncTx(ctx context.Context, fn func(storekit.SyncTx) error) error {
	return s.wrap("sync transaction", inTx(ctx, s.write, func(tx *sql.Tx) error {
		ot, err := newOrderTx(ctx, tx)
		if err != nil {
			return err
		}
		defer ot.close()
		return fn(&syncTx{orderTx: ot})
	}))
}

// syncTx is storekit.SyncTx on a transaction. The batches are small (a
// page of orders), so its statements are prepared by database/sql as they
// come.
type syncTx struct {
	*orderTx
}

func (t *syncTx) StoredOrder(ctx context.Context, id int64) (*certorder.Order, error) {
	var n storekit.OrderRow
	err := t.tx.QueryRowContext(ctx, `SELECT `+storekit.OrderColumns+` FROM orders o WHERE o.id = ?`, id).Scan(n.Dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	return n.Order()
}

func (t *syncTx) RenewedFrom(ctx context.Context, id int64) (int64, int64, error) {
	var old, member int64
	err := t.tx.QueryRowContext(ctx, `SELECT id, member_id FROM orders WHERE renewed_by = ? ORDER BY id LIMIT 1`, id).Scan(&old, &member)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	return old, member, err
}

func (t *syncTx) ContainerMember(ctx context.Context, container int64) (int64, error) {
	var member int64
	err := t.tx.QueryRowContext(ctx, `SELECT member_id FROM container_links WHERE container_id = ?`, container).Scan(&member)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return member, err
}

func (t *syncTx) UnassignedOrder(ctx context.Context, id int64) (*storekit.UpstreamOrder, error) {
	u, err := storekit.ScanUnassigned(t.tx.QueryRowContext(ctx, `SELECT `+storekit.UnassignedColumns+` FROM unassigned_orders WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: unassigned order %d", certorder.ErrNotFound, id)
	}
	return u, err
}

func (t *syncTx) SaveOrder(ctx context.Context, memberID int64, o *certorder.Order, renewedBy int64) error {
	return t.save(ctx, memberID, o, renewedBy)
}

func (t *syncTx) SaveUnassigned(ctx context.Context, u storekit.UpstreamOrder) error {
	o := u.Order
	_, err := t.tx.ExecContext(ctx, `INSERT INTO unassigned_orders
		(id, container_id, status, valid_till, renewed_by, doc, doc_format, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET container_id = excluded.container_id, status = excluded.status,
		valid_till = excluded.valid_till, renewed_by = excluded.renewed_by, doc = excluded.doc,
		doc_format = excluded.doc_format, updated_at = excluded.updated_at`,
		o.ID, u.Container, o.Status, o.Certificate.ValidTill, sql.NullInt64{Int64: o.RenewedBy, Valid: o.RenewedBy != 0},
		o.Doc, certorder.DocFormat, t.stamp)
	return err
}

func (t *syncTx) DeleteUnassigned(ctx context.Context, id int64) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM unassigned_orders WHERE id = ?`, id)
	return err
}

// UnassignedOrders returns a page of unassigned orders.
func (s *Store) UnassignedOrders(ctx context.Context, adoptable bool, afterID int64, limit int) ([]storekit.UpstreamOrder, error) {
	where := `u.id > ?`
	if adoptable {
		where += ` AND (u.container_id IN (SELECT container_id FROM container_links)
			OR EXISTS (SELECT 1 FROM orders o WHERE o.renewed_by = u.id))`
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+storekit.UnassignedColumns+` FROM unassigned_orders u WHERE `+where+
		` ORDER BY u.id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, s.wrap("unassigned orders", err)
	}
	defer rows.Close()
	var out []storekit.UpstreamOrder
	for rows.Next() {
		u, err := storekit.ScanUnassigned(rows)
		if err != nil {
			return nil, s.wrap("unassigned orders", err)
		}
		out = append(out, *u)
	}
	return out, s.wrap("unassigned orders", rows.Err())
}

// UnassignedRefs lists every unassigned order.
func (s *Store) UnassignedRefs(ctx context.Context) ([]storekit.UpstreamRef, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id, container_id FROM unassigned_orders ORDER BY container_id, id`)
	if err != nil {
		return nil, s.wrap("unassigned orders", err)
	}
	defer rows.Close()
	var refs []storekit.UpstreamRef
	for rows.Next() {
		var r storekit.UpstreamRef
		if err := rows.Scan(&r.ID, &r.Container); err != nil {
			return nil, s.wrap("unassigned orders", err)
		}
		refs = append(refs, r)
	}
	return refs, s.wrap("unassigned orders", rows.Err())
}

// SyncLockPath is the lock file of the sync of the store at path.
func SyncLockPath(path string) string { return path + "-sync.lock" }

// LockSync takes the sync lock: an exclusive flock(2) on a file beside the
// database. The kernel drops it when the process ends, however it ends, so
// a killed sync never leaves it behind; a SQLite file serves one machine,
// so a lock of that machine is enough.
func (s *Store) LockSync(ctx context.Context) (storekit.SyncLock, bool, error) {
	if s.closed.Load() {
		return nil, false, s.wrap("sync lock", sql.ErrConnDone)
	}
	l := flock.New(SyncLockPath(s.path))
	ok, err := l.TryLock()
	if err != nil {
		return nil, false, fmt.Errorf("sync lock: %w: %w", certorder.ErrUnavailable, err)
	}
	if !ok {
		return nil, false, nil
	}
	return fileLock{l}, true, nil
}

type fileLock struct{ l *flock.Flock }

func (f fileLock) Check(context.Context) error { return nil } // held until released or the process ends
func (f fileLock) Release()                    { f.l.Close() }

// SyncState returns the cursor and the last runs.
func (s *Store) SyncState(ctx context.Context, runs int) (storekit.SyncState, error) {
	var st storekit.SyncState
	var cursor sql.NullString
	if err := s.read.QueryRowContext(ctx, `SELECT cursor FROM sync_state WHERE id = 1`).Scan(&cursor); err != nil {
		return st, s.wrap("sync state", err)
	}
	st.Cursor = parseTime(cursor)
	rows, err := s.read.QueryContext(ctx, `SELECT id, started_at, finished_at, instance, ok, error, summary, cursor
		FROM sync_runs ORDER BY id DESC LIMIT ?`, max(runs, 0))
	if err != nil {
		return st, s.wrap("sync state", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r storekit.SyncRun
		var started, finished, cursor sql.NullString
		var summary string
		if err := rows.Scan(&r.ID, &started, &finished, &r.Instance, &r.OK, &r.Error, &summary, &cursor); err != nil {
			return st, s.wrap("sync state", err)
		}
		r.Started, r.Finished, r.Cursor = parseTime(started), parseTime(finished), parseTime(cursor)
		if err := json.Unmarshal([]byte(summary), &r.Summary); err != nil {
			return st, s.wrap("sync state", fmt.Errorf("run %d: summary: %w", r.ID, err))
		}
		st.Runs = append(st.Runs, r)
	}
	return st, s.wrap("sync state", rows.Err())
}

// RecordSyncRun keeps a run, and moves the cursor if it succeeded.
func (s *Store) RecordSyncRun(ctx context.Context, run storekit.SyncRun) error {
	summary, err := json.Marshal(run.Summary)
	if err != nil {
		return err
	}
	return s.wrap("record sync run", inTx(ctx, s.write, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sync_runs (started_at, finished_at, instance, ok, error, summary, cursor)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, formatTime(run.Started), formatTime(run.Finished), run.Instance, run.OK,
			run.Error, string(summary), formatTime(run.Cursor)); err != nil {
			return err
		}
		if run.OK {
			if _, err := tx.ExecContext(ctx, `UPDATE sync_state SET cursor = ? WHERE id = 1`, formatTime(run.Cursor)); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM sync_runs WHERE id NOT IN
			(SELECT id FROM sync_runs ORDER BY id DESC LIMIT ?)`, storekit.MaxSyncRuns)
		return err
	}))
}
