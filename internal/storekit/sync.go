package storekit

import (
	"context"

	"github.com/certorder/certorder"
)

// SyncTx is a store's transaction as ccsync.ApplyUpstream uses it; its reads see
// its own writes.
type SyncTx interface {
	// Link reads a stored order's owner and renewal; certorder.ErrNotFound if none.
	Link(ctx context.Context, id int64) (certorder.OrderLink, error)
	// StoredOrder reads a stored order (MemberID, Status, RenewedBy, Doc);
	// certorder.ErrNotFound if none.
	StoredOrder(ctx context.Context, id int64) (*certorder.Order, error)
	// RenewedFrom returns the lowest-numbered stored order renewed by id,
	// and its member; 0, 0 if none.
	RenewedFrom(ctx context.Context, id int64) (oldID, memberID int64, err error)
	// RenewedFromOther returns a stored order of another member than
	// memberID that is renewed by id; 0 if none.
	RenewedFromOther(ctx context.Context, id, memberID int64) (int64, error)
	// ContainerMember returns the member linked to the division; 0 if none.
	ContainerMember(ctx context.Context, container int64) (int64, error)
	// UnassignedOrder reads an unassigned order; certorder.ErrNotFound if none.
	UnassignedOrder(ctx context.Context, id int64) (*certorder.UpstreamOrder, error)
	// SaveOrder stores o for the member with the renewal relation
	// renewedBy, as ImportOrders stores an order it has checked.
	SaveOrder(ctx context.Context, memberID int64, o *certorder.Order, renewedBy int64) error
	// SaveUnassigned stores u as unassigned; DeleteUnassigned forgets one
	// (deleting one that is not there is not an error).
	SaveUnassigned(ctx context.Context, u certorder.UpstreamOrder) error
	DeleteUnassigned(ctx context.Context, id int64) error
	// AddEvents writes the events of the orders saved (OrderChange.Events).
	certorder.EventWriter
	// The certificate histories of the orders saved (RecordCertificates).
	certorder.HistoryWriter
}

// SyncTxRunner runs sync transactions: a store, or a ccsync.DryRun in front
// of one.
type SyncTxRunner interface {
	// InSyncTx runs fn in one transaction of the store, committed when fn
	// returns nil and rolled back when it returns an error, which InSyncTx
	// returns (classified as every store error is). ccsync.ApplyBatch is
	// its use.
	InSyncTx(ctx context.Context, fn func(SyncTx) error) error
}

// Store is a whole store as stores.Open returns it: every role of the
// root package, and the sync's transactions.
type Store interface {
	certorder.Store
	SyncTxRunner
}
