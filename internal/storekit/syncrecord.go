package storekit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/certorder/certorder"
)

// What the sync keeps beside the orders, as both stores keep it: the
// divisions linked to members, the orders no member holds yet, the runs
// and the cursor.

// LinkContainer ties a member to a division.
func (k *Kit) LinkContainer(ctx context.Context, member string, container int64) error {
	if container <= 0 {
		return fmt.Errorf("%w: division %d is not a positive number", certorder.ErrInvalid, container)
	}
	return k.Wrap("link division", k.Write.InTx(ctx, func(tx DB) error {
		mid, err := MemberID(ctx, tx, member)
		if err != nil {
			return err
		}
		var owner int64
		err = tx.QueryRow(ctx, `INSERT INTO container_links (container_id, member_id, created_at) VALUES (?, ?, ?)
			ON CONFLICT (container_id) DO UPDATE SET container_id = excluded.container_id
			RETURNING member_id`, container, mid, time.Now()).Scan(&owner)
		if err == nil && owner != mid {
			return fmt.Errorf("%w: division %d is linked to another member", certorder.ErrConflict, container)
		}
		return err
	}))
}

// UnlinkContainer removes a link.
func (k *Kit) UnlinkContainer(ctx context.Context, member string, container int64) error {
	return k.Wrap("unlink division", k.Write.InTx(ctx, func(tx DB) error {
		mid, err := MemberID(ctx, tx, member)
		if err != nil {
			return err
		}
		n, err := tx.Exec(ctx, `DELETE FROM container_links WHERE container_id = ? AND member_id = ?`, container, mid)
		return oneRow(n, err, fmt.Sprintf("division %d is not linked to member %s", container, member))
	}))
}

// ContainerLinks lists every link.
func (k *Kit) ContainerLinks(ctx context.Context) ([]certorder.ContainerLink, error) {
	links, err := Query(ctx, k.Read, func(row Row) (certorder.ContainerLink, error) {
		var l certorder.ContainerLink
		var created Time
		err := row.Scan(&l.Container, &l.MemberID, &l.Member, &created)
		l.CreatedAt = created.T
		return l, err
	}, `SELECT l.container_id, l.member_id, m.name, l.created_at
		FROM container_links l JOIN members m ON m.id = l.member_id ORDER BY m.name, l.container_id`)
	return links, k.Wrap("division links", err)
}

// KnownOrders returns what the store holds of the orders.
func (k *Kit) KnownOrders(ctx context.Context, ids []int64) (map[int64]KnownOrder, error) {
	known := map[int64]KnownOrder{}
	if len(ids) == 0 {
		return known, nil
	}
	list := k.List(ids)
	_, err := Query(ctx, k.Read, func(row Row) (struct{}, error) {
		var id int64
		var o KnownOrder
		err := row.Scan(&id, &o.MemberID, &o.Container, &o.Status, &o.ValidTill, &o.RenewedBy)
		known[id] = o
		return struct{}{}, err
	}, `SELECT id, member_id, CAST(0 AS BIGINT), status, valid_till, COALESCE(renewed_by, 0) FROM orders WHERE `+k.InList("id")+`
		UNION ALL
		SELECT id, 0, container_id, status, valid_till, COALESCE(renewed_by, 0) FROM unassigned_orders
		WHERE `+k.InList("id")+` AND id NOT IN (SELECT id FROM orders WHERE `+k.InList("id")+`)`, list, list, list)
	return known, k.Wrap("known orders", err)
}

// UnassignedOrders returns a page of unassigned orders.
func (k *Kit) UnassignedOrders(ctx context.Context, adoptable bool, afterID int64, limit int) ([]UpstreamOrder, error) {
	where := `u.id > ?`
	if adoptable {
		where += ` AND (u.container_id IN (SELECT container_id FROM container_links)
			OR EXISTS (SELECT 1 FROM orders o WHERE o.renewed_by = u.id))`
	}
	var lim any = limit
	if limit <= 0 {
		lim = k.NoLimit
	}
	out, err := Query(ctx, k.Read, func(row Row) (UpstreamOrder, error) {
		u, err := ScanUnassigned(row)
		if err != nil {
			return UpstreamOrder{}, err
		}
		return *u, nil
	}, `SELECT `+UnassignedColumns+` FROM unassigned_orders u WHERE `+where+` ORDER BY u.id LIMIT ?`, afterID, lim)
	return out, k.Wrap("unassigned orders", err)
}

// UnassignedRefs lists every unassigned order.
func (k *Kit) UnassignedRefs(ctx context.Context) ([]UpstreamRef, error) {
	refs, err := Query(ctx, k.Read, func(row Row) (UpstreamRef, error) {
		var r UpstreamRef
		return r, row.Scan(&r.ID, &r.Container)
	}, `SELECT id, container_id FROM unassigned_orders ORDER BY container_id, id`)
	return refs, k.Wrap("unassigned orders", err)
}

// SyncState returns the cursor and the last runs.
func (k *Kit) SyncState(ctx context.Context, runs int) (SyncState, error) {
	var st SyncState
	var cursor Time
	if err := k.Read.QueryRow(ctx, `SELECT cursor FROM sync_state WHERE id = 1`).Scan(&cursor); err != nil {
		return st, k.Wrap("sync state", err)
	}
	st.Cursor = cursor.T
	var err error
	st.Runs, err = Query(ctx, k.Read, func(row Row) (SyncRun, error) {
		var r SyncRun
		var started, finished, cursor Time
		var summary string
		if err := row.Scan(&r.ID, &started, &finished, &r.Instance, &r.OK, &r.Error, &summary, &cursor); err != nil {
			return r, err
		}
		r.Started, r.Finished, r.Cursor = started.T, finished.T, cursor.T
		if err := json.Unmarshal([]byte(summary), &r.Summary); err != nil {
			return r, fmt.Errorf("run %d: summary: %w", r.ID, err)
		}
		return r, nil
	}, `SELECT id, started_at, finished_at, instance, ok, error, summary, cursor
		FROM sync_runs ORDER BY id DESC LIMIT ?`, max(runs, 0))
	return st, k.Wrap("sync state", err)
}

// RecordSyncRun keeps a run, and moves the cursor if it succeeded.
func (k *Kit) RecordSyncRun(ctx context.Context, run SyncRun) error {
	summary, err := json.Marshal(run.Summary)
	if err != nil {
		return err
	}
	return k.Wrap("record sync run", k.Write.InTx(ctx, func(tx DB) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sync_runs (started_at, finished_at, instance, ok, error, summary, cursor)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, run.Started, run.Finished, run.Instance, run.OK,
			run.Error, string(summary), run.Cursor); err != nil {
			return err
		}
		if run.OK {
			if _, err := tx.Exec(ctx, `UPDATE sync_state SET cursor = ? WHERE id = 1`, run.Cursor); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `DELETE FROM sync_runs WHERE id NOT IN
			(SELECT id FROM sync_runs ORDER BY id DESC LIMIT ?)`, MaxSyncRuns)
		return err
	}))
}

// SyncRows are the reads and writes of the sync's transaction (SyncTx)
// both stores make alike, in the transaction Tx; a store's syncTx embeds
// them beside its order writes.
type SyncRows struct{ Tx DB }

// StoredOrder reads a stored order; ErrNotFound if none.
func (t SyncRows) StoredOrder(ctx context.Context, id int64) (*certorder.Order, error) {
	var n OrderRow
	err := t.Tx.QueryRow(ctx, `SELECT `+OrderColumns+` FROM orders o WHERE o.id = ?`, id).Scan(n.Dest()...)
	if err != nil {
		return nil, notFound(err, fmt.Sprintf("order %d", id))
	}
	return n.Order()
}

// RenewedFrom is the lowest-numbered order renewed by id and its member; 0s if none.
func (t SyncRows) RenewedFrom(ctx context.Context, id int64) (int64, int64, error) {
	var old, member int64
	err := t.Tx.QueryRow(ctx, `SELECT id, member_id FROM orders WHERE renewed_by = ? ORDER BY id LIMIT 1`, id).Scan(&old, &member)
	if errors.Is(err, ErrNoRows) {
		return 0, 0, nil
	}
	return old, member, err
}

// ContainerMember is the member a division is linked to; 0 if none.
func (t SyncRows) ContainerMember(ctx context.Context, container int64) (int64, error) {
	var member int64
	err := t.Tx.QueryRow(ctx, `SELECT member_id FROM container_links WHERE container_id = ?`, container).Scan(&member)
	if errors.Is(err, ErrNoRows) {
		return 0, nil
	}
	return member, err
}

// UnassignedOrder reads an unassigned order; ErrNotFound if none.
func (t SyncRows) UnassignedOrder(ctx context.Context, id int64) (*UpstreamOrder, error) {
	u, err := ScanUnassigned(t.Tx.QueryRow(ctx, `SELECT `+UnassignedColumns+` FROM unassigned_orders WHERE id = ?`, id))
	return u, notFound(err, fmt.Sprintf("unassigned order %d", id))
}

// SaveUnassigned stores an order no member holds.
func (t SyncRows) SaveUnassigned(ctx context.Context, u UpstreamOrder) error {
	o := u.Order
	var renewedBy any
	if o.RenewedBy != 0 {
		renewedBy = o.RenewedBy
	}
	_, err := t.Tx.Exec(ctx, `INSERT INTO unassigned_orders
		(id, container_id, status, valid_till, renewed_by, doc, doc_format, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET container_id = excluded.container_id, status = excluded.status,
		valid_till = excluded.valid_till, renewed_by = excluded.renewed_by, doc = excluded.doc,
		doc_format = excluded.doc_format, updated_at = excluded.updated_at`,
		o.ID, u.Container, o.Status, o.Certificate.ValidTill, renewedBy, o.Doc, certorder.DocFormat, time.Now())
	return err
}

// DeleteUnassigned deletes an unassigned order.
func (t SyncRows) DeleteUnassigned(ctx context.Context, id int64) error {
	_, err := t.Tx.Exec(ctx, `DELETE FROM unassigned_orders WHERE id = ?`, id)
	return err
}
