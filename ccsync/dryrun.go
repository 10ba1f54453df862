package ccsync

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// DryRun is a storekit.SyncTxRunner in front of a store that writes
// nothing: each of its transactions is the store's, rolled back, and it
// holds what they would have written, so that later batches of the run see
// it. Its memory is a few dozen bytes an order.
type DryRun struct {
	store       storekit.SyncTxRunner
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

// NewDryRun starts a dry run in front of store.
func NewDryRun(store storekit.SyncTxRunner) *DryRun {
	return &DryRun{store: store, orders: map[int64]dryOrder{}, renewedFrom: map[int64]int64{},
		unassigned: map[int64]*dryUnassigned{}}
}

// errRollback ends a dry run's transaction.
var errRollback = errors.New("dry run: rolled back")

// InSyncTx runs fn in a transaction of the store that is always rolled
// back: fn's reads see the dry run's writes first, its writes go to the
// dry run only.
func (d *DryRun) InSyncTx(ctx context.Context, fn func(storekit.SyncTx) error) error {
	err := d.store.InSyncTx(ctx, func(tx storekit.SyncTx) error {
		if err := fn(&dryTx{d: d, inner: tx, sums: map[*certorder.Order][sha256.Size]byte{}}); err != nil {
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
	d     *DryRun
	inner storekit.SyncTx
	// sums holds the documents' sums of the orders this transaction read
	// from the dry run, which keeps no document (see sameDoc).
	sums map[*certorder.Order][sha256.Size]byte
}

// sameDoc reports whether stored, an order read in tx, has o's document.
func sameDoc(tx storekit.SyncTx, stored, o *certorder.Order) bool {
	return docSum(tx, stored) == docSum(tx, o)
}

// docSum is the SHA-256 of o's document, or of the document a dry run
// would have written for an order read from it.
func docSum(tx storekit.SyncTx, o *certorder.Order) [sha256.Size]byte {
	if t, ok := tx.(*dryTx); ok {
		if sum, ok := t.sums[o]; ok {
			return sum
		}
	}
	return sha256.Sum256(o.Doc)
}

func (t *dryTx) Link(ctx context.Context, id int64) (certorder.OrderLink, error) {
	if o, ok := t.d.orders[id]; ok {
		return certorder.OrderLink{MemberID: o.memberID, RenewedBy: o.renewedBy}, nil
	}
	return t.inner.Link(ctx, id)
}

func (t *dryTx) StoredOrder(ctx context.Context, id int64) (*certorder.Order, error) {
	if o, ok := t.d.orders[id]; ok {
		read := &certorder.Order{ID: id, MemberID: o.memberID, Status: o.status, RenewedBy: o.renewedBy,
			Certificate: certorder.Certificate{ValidTill: o.validTill}}
		t.sums[read] = o.sum
		return read, nil
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

func (t *dryTx) UnassignedOrder(ctx context.Context, id int64) (*storekit.UpstreamOrder, error) {
	if u, ok := t.d.unassigned[id]; ok {
		if u == nil {
			return nil, fmt.Errorf("%w: unassigned order %d", certorder.ErrNotFound, id)
		}
		read := &certorder.Order{ID: id, RenewedBy: u.renewedBy}
		t.sums[read] = u.sum
		return &storekit.UpstreamOrder{Order: read, Container: u.container}, nil
	}
	return t.inner.UnassignedOrder(ctx, id)
}

func (t *dryTx) SaveOrder(_ context.Context, memberID int64, o *certorder.Order, renewedBy int64) error {
	t.d.orders[o.ID] = dryOrder{memberID: memberID, renewedBy: renewedBy, status: o.Status, validTill: o.Certificate.ValidTill, sum: docSum(t, o)}
	if renewedBy != 0 {
		if old, ok := t.d.renewedFrom[renewedBy]; !ok || o.ID < old {
			t.d.renewedFrom[renewedBy] = o.ID
		}
	}
	return nil
}

func (t *dryTx) SaveUnassigned(_ context.Context, u storekit.UpstreamOrder) error {
	t.d.unassigned[u.Order.ID] = &dryUnassigned{container: u.Container, renewedBy: u.Order.RenewedBy, sum: docSum(t, u.Order)}
	return nil
}

func (t *dryTx) DeleteUnassigned(_ context.Context, id int64) error {
	t.d.unassigned[id] = nil
	return nil
}

// AddEvents drops the events: a dry run tells no member anything.
func (t *dryTx) AddEvents(context.Context, []certorder.Event) error { return nil }

// Histories reads the store's histories. A run applies an order once, so
// it never reads back a history it wrote: the dry run keeps none.
func (t *dryTx) Histories(ctx context.Context, orders []*certorder.Order) (map[int64][]certorder.CertificateEntry, error) {
	return t.inner.Histories(ctx, orders)
}

// SaveCertificates and DeleteCertificates change nothing (see Histories).
func (t *dryTx) SaveCertificates(context.Context, []certorder.CertificateEntry) error { return nil }
func (t *dryTx) DeleteCertificates(context.Context, []int64) error                    { return nil }
