package storekit

import (
	"context"
	"iter"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
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
	UnassignedOrder(ctx context.Context, id int64) (*UpstreamOrder, error)
	// SaveOrder stores o for the member with the renewal relation
	// renewedBy, as ImportOrders stores an order it has checked.
	SaveOrder(ctx context.Context, memberID int64, o *certorder.Order, renewedBy int64) error
	// SaveUnassigned stores u as unassigned; DeleteUnassigned forgets one
	// (deleting one that is not there is not an error).
	SaveUnassigned(ctx context.Context, u UpstreamOrder) error
	DeleteUnassigned(ctx context.Context, id int64) error
	// AddEvents writes the events of the orders saved (OrderChange.Events).
	EventWriter
	// The certificate histories of the orders saved (RecordCertificates).
	HistoryWriter
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
// root package, the queue, the order events' way into it, and the sync's
// transactions. Only the code that opens a store (and the store suite)
// holds it whole; everything else takes the interface it declares where it
// uses it (webhook.Store, mailer.Store, web.Store, ccsync.Store, ...).
type Store interface {
	CredentialStore
	MemberStore
	KeyStore
	OrderStore
	AuditStore
	SessionStore
	MemberWebhookStore
	EndpointAdmin
	MemberNoticeStore
	NoticeRecipientStore
	SyncStore
	CertCentralWebhookStore
	LifecycleReader
	CertificateFinder
	Pinger
	queue.Store
	EventQueues
	SyncTxRunner

	// Restore loads an export (see internal/export) into an empty
	// store, in one transaction; ErrConflict if the store holds anything.
	Restore(ctx context.Context, records iter.Seq2[Record, error]) error
	// Close releases the store; every call after it fails with ErrUnavailable.
	Close() error
}

// EventQueues is how the order events reach the queue, and what the
// consumers of those jobs keep beside them: webhook.Store and mailer.Store
// declare these for their use, with their meaning.
type EventQueues interface {
	FanOut(ctx context.Context, limit int, build func(ev certorder.Event, ep certorder.Endpoint) (queue.Job, error)) (int, error)
	RecordEndpointAttempt(ctx context.Context, id int64, at time.Time, ok bool, disable string) error
	EndingOrders(ctx context.Context, typ, from, to string) ([]EndingOrder, error)
	RecordEnding(ctx context.Context, typ string, o EndingOrder, thresholds []int, data []byte, at time.Time) (bool, error)
	PruneEvents(ctx context.Context, before time.Time) error

	QueueNotices(ctx context.Context, limit int, at time.Time,
		plan func(ev certorder.Event, a certorder.NoticeAddress, today int) (queue.Job, bool)) (taken, queued int, err error)
	NoticeEvents(ctx context.Context, jobID int64, limit int) ([]certorder.Event, int, error)
	RecordNoticeAttempt(ctx context.Context, addressID int64, a NoticeAttempt) error
}
