package certorder

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
)

// docSum is the SHA-256 of the order's document: a dry run keeps only
// that of the orders it would have written.
func (o *Order) docSum() [sha256.Size]byte {
	if o.sum != nil {
		return *o.sum
	}
	return sha256.Sum256(o.Doc)
}

// SyncDryRun is a SyncTxRunner in front of a store that writes nothing:
// each of its transactions is the store's, rolled back, and it holds what
// they would have written, so that later batches of the run see it. Its
// memory is a few dozen bytes an order.
type SyncDryRun struct {
	store       SyncTxRunner
	orders      map[int64]dryOrder
	renewedFrom map[int64]int64 // renewal -> the order it renewed
	unassigned  map[int64]*dryUnassigned
}

type dryOrder struct {
	memberID, renewedBy int64
	status, validTill   string
	sum                 [sha256.Size]byte
}

// dryUnassigned is an unassigned order a dry run would have written; nil
// in the map: one it would have deleted.
type dryUnassigned struct {
	container, renewedBy int64
	sum                  [sha256.Size]byte
}

// NewSyncDryRun starts a dry run in front of store.
func NewSyncDryRun(store SyncTxRunner) *SyncDryRun {
	return &SyncDryRun{store: store, orders: map[int64]dryOrder{}, renewedFrom: map[int64]int64{},
		unassigned: map[int64]*dryUnassigned{}}
}

// errRollback ends a dry run's transaction.
var errRollback = errors.New("dry run: rolled back")

// InSyncTx runs fn in a transaction of the store that is always rolled
// back: fn's reads see the dry run's writes first, its writes go to the
// dry run only.
func (d *SyncDryRun) InSyncTx(ctx context.Context, fn func(SyncTx) error) error {
	err := d.store.InSyncTx(ctx, func(tx SyncTx) error {
		if err := fn(&dryTx{d: d, inner: tx}); err != nil {
			return err
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		return nil
	}
	return err
}

type dryTx struct {
	d     *SyncDryRun
	inner SyncTx
}

func (t *dryTx) Link(ctx context.Context, id int64) (OrderLink, error) {
	if o, ok := t.d.orders[id]; ok {
		return OrderLink{MemberID: o.memberID, RenewedBy: o.renewedBy}, nil
	}
	return t.inner.Link(ctx, id)
}

func (t *dryTx) StoredOrder(ctx context.Context, id int64) (*Order, error) {
	if o, ok := t.d.orders[id]; ok {
		sum := o.sum
		return &Order{ID: id, MemberID: o.memberID, Status: o.status, ValidTill: o.validTill, RenewedBy: o.renewedBy, sum: &sum}, nil
	}
	return t.inner.StoredOrder(ctx, id)
}

// stale reports a stored order's renewal relation the dry run has changed.
func (t *dryTx) stale(oldID, renewal int64) bool {
	o, ok := t.d.orders[oldID]
	return ok && o.renewedBy != renewal
}

func (t *dryTx) RenewedFrom(ctx context.Context, id int64) (int64, int64, error) {
	if old, ok := t.d.renewedFrom[id]; ok && !t.stale(old, id) {
		return old, t.d.orders[old].memberID, nil
	}
	old, member, err := t.inner.RenewedFrom(ctx, id)
	if err != nil || t.stale(old, id) {
		return 0, 0, err
	}
	return old, member, nil
}

func (t *dryTx) RenewedFromOther(ctx context.Context, id, memberID int64) (int64, error) {
	if old, ok := t.d.renewedFrom[id]; ok && !t.stale(old, id) && t.d.orders[old].memberID != memberID {
		return old, nil
	}
	other, err := t.inner.RenewedFromOther(ctx, id, memberID)
	if err != nil || t.stale(other, id) {
		return 0, err
	}
	return other, nil
}

func (t *dryTx) ContainerMember(ctx context.Context, container int64) (int64, error) {
	return t.inner.ContainerMember(ctx, container)
}

func (t *dryTx) UnassignedOrder(ctx context.Context, id int64) (*UpstreamOrder, error) {
	if u, ok := t.d.unassigned[id]; ok {
		if u == nil {
			return nil, fmt.Errorf("%w: unassigned order %d", ErrNotFound, id)
		}
		sum := u.sum
		return &UpstreamOrder{Order: &Order{ID: id, RenewedBy: u.renewedBy, sum: &sum}, Container: u.container}, nil
	}
	return t.inner.UnassignedOrder(ctx, id)
}

func (t *dryTx) SaveOrder(_ context.Context, memberID int64, o *Order, renewedBy int64) error {
	t.d.orders[o.ID] = dryOrder{memberID: memberID, renewedBy: renewedBy, status: o.Status, validTill: o.ValidTill, sum: o.docSum()}
	if renewedBy != 0 {
		if old, ok := t.d.renewedFrom[renewedBy]; !ok || o.ID < old {
			t.d.renewedFrom[renewedBy] = o.ID
		}
	}
	return nil
}

func (t *dryTx) SaveUnassigned(_ context.Context, u UpstreamOrder) error {
	t.d.unassigned[u.Order.ID] = &dryUnassigned{container: u.Container, renewedBy: u.Order.RenewedBy, sum: u.Order.docSum()}
	return nil
}

func (t *dryTx) DeleteUnassigned(_ context.Context, id int64) error {
	t.d.unassigned[id] = nil
	return nil
}
