package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// LinkContainer ties a member to a division.
func (s *Store) LinkContainer(ctx context.Context, member string, container int64) error {
	if container <= 0 {
		return fmt.Errorf("%w: division %d is not a positive number", certorder.ErrInvalid, container)
	}
	return s.wrap("link division", s.inTx(ctx, func(tx pgx.Tx) error {
		mid, err := storekit.MemberID(ctx, pgDB{tx}, member)
		if err != nil {
			return err
		}
		var owner int64
		err = tx.QueryRow(ctx, `INSERT INTO container_links (container_id, member_id, created_at) VALUES ($1, $2, now())
			ON CONFLICT (container_id) DO UPDATE SET container_id = excluded.container_id
			RETURNING member_id`, container, mid).Scan(&owner)
		if err == nil && owner != mid {
			return fmt.Errorf("%w: division %d is linked to another member", certorder.ErrConflict, container)
		}
		return err
	}))
}

// UnlinkContainer removes a link.
func (s *Store) UnlinkContainer(ctx context.Context, member string, container int64) error {
	return s.wrap("unlink division", s.inTx(ctx, func(tx pgx.Tx) error {
		mid, err := storekit.MemberID(ctx, pgDB{tx}, member)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM container_links WHERE container_id = $1 AND member_id = $2`, container, mid)
		return oneRow(tag, err, fmt.Sprintf("division %d is not linked to member %s", container, member))
	}))
}

// ContainerLinks lists every link.
func (s *Store) ContainerLinks(ctx context.Context) ([]certorder.ContainerLink, error) {
	rows, _ := s.pool.Query(ctx, `SELECT l.container_id, l.member_id, m.name, l.created_at
		FROM container_links l JOIN members m ON m.id = l.member_id ORDER BY m.name, l.container_id`)
	links, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.ContainerLink, error) {
		var l certorder.ContainerLink
		err := row.Scan(&l.Container, &l.MemberID, &l.Member, &l.CreatedAt)
		l.CreatedAt = l.CreatedAt.UTC()
		return l, err
	})
	return links, s.wrap("division links", err)
}

// KnownOrders returns what the store holds of the orders.
func (s *Store) KnownOrders(ctx context.Context, ids []int64) (map[int64]storekit.KnownOrder, error) {
	known := map[int64]storekit.KnownOrder{}
	if len(ids) == 0 {
		return known, nil
	}
	rows, _ := s.pool.Query(ctx, `
		SELECT id, member_id, 0::BIGINT, status, valid_till, COALESCE(renewed_by, 0) FROM orders WHERE id = ANY($1)
		UNION ALL
		SELECT id, 0, container_id, status, valid_till, COALESCE(renewed_by, 0) FROM unassigned_orders
		WHERE id = ANY($1) AND id NOT IN (SELECT id FROM orders WHERE id = ANY($1))`, ids)
	var id int64
	var k storekit.KnownOrder
	_, err := pgx.ForEachRow(rows, []any{&id, &k.MemberID, &k.Container, &k.Status, &k.ValidTill, &k.RenewedBy}, func() error {
		known[id] = k
		return nil
	})
	return known, s.wrap("known orders", err)
}

// InSyncTx runs fn in one transaction (see storekit.SyncStore).
func (s *Store) InSyncTx(ctx context.Context, fn func(storekit.SyncTx) error) error {
	return s.wrap("sync transaction", s.inTx(ctx, func(tx pgx.Tx) error {
		ot, err := newOrderTx(ctx, tx)
		if err != nil {
			return err
		}
		return fn(&syncTx{orderTx: ot})
	}))
}

// syncTx is storekit.SyncTx on a transaction.
type syncTx struct {
	*orderTx
}

func (t *syncTx) StoredOrder(ctx context.Context, id int64) (*certorder.Order, error) {
	var n storekit.OrderRow
	err := t.tx.QueryRow(ctx, `SELECT `+storekit.OrderColumns+` FROM orders o WHERE o.id = $1`, id).Scan(n.Dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	return n.Order()
}

func (t *syncTx) RenewedFrom(ctx context.Context, id int64) (int64, int64, error) {
	var old, member int64
	err := t.tx.QueryRow(ctx, `SELECT id, member_id FROM orders WHERE renewed_by = $1 ORDER BY id LIMIT 1`, id).Scan(&old, &member)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, nil
	}
	return old, member, err
}

func (t *syncTx) ContainerMember(ctx context.Context, container int64) (int64, error) {
	var member int64
	err := t.tx.QueryRow(ctx, `SELECT member_id FROM container_links WHERE container_id = $1`, container).Scan(&member)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return member, err
}

func (t *syncTx) UnassignedOrder(ctx context.Context, id int64) (*storekit.UpstreamOrder, error) {
	u, err := storekit.ScanUnassigned(t.tx.QueryRow(ctx, `SELECT `+storekit.UnassignedColumns+` FROM unassigned_orders WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: unassigned order %d", certorder.ErrNotFound, id)
	}
	return u, err
}

func (t *syncTx) SaveOrder(ctx context.Context, memberID int64, o *certorder.Order, renewedBy int64) error {
	return t.save(ctx, memberID, o, renewedBy)
}

func (t *syncTx) SaveUnassigned(ctx context.Context, u storekit.UpstreamOrder) error {
	o := u.Order
	_, err := t.tx.Exec(ctx, `INSERT INTO unassigned_orders
		(id, container_id, status, valid_till, renewed_by, doc, doc_format, updated_at)
		VALUES ($1, $2, $3, $4, NULLIF($5::BIGINT, 0), $6, $7, now())
		ON CONFLICT (id) DO UPDATE SET container_id = excluded.container_id, status = excluded.status,
		valid_till = excluded.valid_till, renewed_by = excluded.renewed_by, doc = excluded.doc,
		doc_format = excluded.doc_format, updated_at = excluded.updated_at`,
		o.ID, u.Container, o.Status, o.Certificate.ValidTill, o.RenewedBy, o.Doc, certorder.DocFormat)
	return err
}

func (t *syncTx) DeleteUnassigned(ctx context.Context, id int64) error {
	_, err := t.tx.Exec(ctx, `DELETE FROM unassigned_orders WHERE id = $1`, id)
	return err
}

// UnassignedOrders returns a page of unassigned orders.
func (s *Store) UnassignedOrders(ctx context.Context, adoptable bool, afterID int64, limit int) ([]storekit.UpstreamOrder, error) {
	where := `u.id > $1`
	if adoptable {
		where += ` AND (u.container_id IN (SELECT container_id FROM container_links)
			OR EXISTS (SELECT 1 FROM orders o WHERE o.renewed_by = u.id))`
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+storekit.UnassignedColumns+` FROM unassigned_orders u WHERE `+where+
		` ORDER BY u.id LIMIT $2`, afterID, lim)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (storekit.UpstreamOrder, error) {
		u, err := storekit.ScanUnassigned(row)
		if err != nil {
			return storekit.UpstreamOrder{}, err
		}
		return *u, nil
	})
	return out, s.wrap("unassigned orders", err)
}

// UnassignedRefs lists every unassigned order.
func (s *Store) UnassignedRefs(ctx context.Context) ([]storekit.UpstreamRef, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, container_id FROM unassigned_orders ORDER BY container_id, id`)
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[storekit.UpstreamRef])
	return refs, s.wrap("unassigned orders", err)
}

// LockSync takes the sync lock: a session-level advisory lock on a
// connection of its own, held for the run. PostgreSQL drops it when the
// session ends, so a killed instance never leaves it behind.
func (s *Store) LockSync(ctx context.Context) (storekit.SyncLock, bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, s.wrap("sync lock", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, `+schemaKey+`)`, lockSync).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, s.wrap("sync lock", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return &sessionLock{conn: conn}, true, nil
}

type sessionLock struct {
	conn *pgxpool.Conn
}

// Check pings the lock's session: if it is gone, so is the lock.
func (l *sessionLock) Check(ctx context.Context) error {
	if err := l.conn.Ping(ctx); err != nil {
		return fmt.Errorf("the sync lock's database session: %w: %w", certorder.ErrUnavailable, err)
	}
	return nil
}

// Release unlocks, then ends the lock's session: a pooled connection must
// not keep the lock should the unlock fail, and the session's end releases
// it whatever state the connection is in (though not at once, hence the
// unlock first).
func (l *sessionLock) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, `+schemaKey+`)`, lockSync)
	l.conn.Hijack().Close(ctx)
}

// SyncState returns the cursor and the last runs.
func (s *Store) SyncState(ctx context.Context, runs int) (storekit.SyncState, error) {
	var st storekit.SyncState
	var cursor *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT cursor FROM sync_state WHERE id = 1`).Scan(&cursor); err != nil {
		return st, s.wrap("sync state", err)
	}
	if cursor != nil {
		st.Cursor = cursor.UTC()
	}
	rows, _ := s.pool.Query(ctx, `SELECT id, started_at, finished_at, instance, ok, error, summary, cursor
		FROM sync_runs ORDER BY id DESC LIMIT $1`, max(runs, 0))
	var err error
	st.Runs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (storekit.SyncRun, error) {
		var r storekit.SyncRun
		var summary string
		if err := row.Scan(&r.ID, &r.Started, &r.Finished, &r.Instance, &r.OK, &r.Error, &summary, &r.Cursor); err != nil {
			return r, err
		}
		r.Started, r.Finished, r.Cursor = r.Started.UTC(), r.Finished.UTC(), r.Cursor.UTC()
		if err := json.Unmarshal([]byte(summary), &r.Summary); err != nil {
			return r, fmt.Errorf("run %d: summary: %w", r.ID, err)
		}
		return r, nil
	})
	return st, s.wrap("sync state", err)
}

// RecordSyncRun keeps a run, and moves the cursor if it succeeded.
func (s *Store) RecordSyncRun(ctx context.Context, run storekit.SyncRun) error {
	summary, err := json.Marshal(run.Summary)
	if err != nil {
		return err
	}
	return s.wrap("record sync run", s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sync_runs (started_at, finished_at, instance, ok, error, summary, cursor)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, run.Started, run.Finished, run.Instance, run.OK, run.Error,
			string(summary), run.Cursor); err != nil {
			return err
		}
		if run.OK {
			if _, err := tx.Exec(ctx, `UPDATE sync_state SET cursor = $1 WHERE id = 1`, run.Cursor); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `DELETE FROM sync_runs WHERE id NOT IN
			(SELECT id FROM sync_runs ORDER BY id DESC LIMIT $1)`, storekit.MaxSyncRuns)
		return err
	}))
}
