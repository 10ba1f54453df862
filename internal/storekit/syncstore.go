package storekit

import (
	"context"
	"time"

	"github.com/certorder/certorder"
)

// The CertCentral sync's protocol with a store (package ccsync keeps the
// store in step with the CA): what it reads and records beside the
// transaction it writes through (SyncTx), and what it reports.

// UpstreamOrder is an order as the sync found it at the CA: the order to
// store, parsed from the spec's document (its RenewedBy is the CA's renewal
// relation), and the division it sits in.
type UpstreamOrder struct {
	Order     *certorder.Order
	Container int64
}

// UpstreamRef names an order left unassigned and its division.
type UpstreamRef struct {
	ID        int64
	Container int64
}

// KnownOrder is what the store holds of an order the CA lists, stored or
// unassigned: enough to tell whether a list entry shows a change.
type KnownOrder struct {
	MemberID  int64 // 0: unassigned
	Container int64 // of an unassigned order: its division when last seen
	Status    string
	ValidTill string
	RenewedBy int64
}

// SyncConflict is an upstream order on which the CA and certorder disagree
// about who owns what. The sync reports it and leaves ownership as it was:
// it never moves an order from one member to another.
type SyncConflict struct {
	OrderID  int64
	MemberID int64 // the member that keeps the order, or would have had it
	Other    int64 // the other member involved, 0 if none
	Reason   string
}

// SyncResult is what ccsync.ApplyUpstream did, or in a dry run would have done.
type SyncResult struct {
	Changes    []certorder.OrderChange
	Unchanged  int
	Unassigned []UpstreamRef // orders of the batch that stay unassigned
	Conflicts  []SyncConflict
}

// SyncSummary counts what one sync run did; it is stored with the run.
type SyncSummary struct {
	Full           bool           `json:"full"`
	DryRun         bool           `json:"dry_run,omitempty"`
	Listed         int            `json:"listed"`              // orders in List orders answers
	StatusChanges  int            `json:"status_changes"`      // orders in status change answers
	Fetched        int            `json:"fetched"`             // Order info answers
	New            int            `json:"new"`                 // orders a member gained
	Changed        int            `json:"changed"`             // members' orders that changed
	StatusChanged  int            `json:"status_changed"`      // of those, changes of status
	Renewals       int            `json:"renewals"`            // renewal relations recorded
	Reissues       int            `json:"reissues,omitempty"`  // certificates newly issued on orders that had one (order.reissued)
	Unassigned     int            `json:"unassigned"`          // orders unassigned after the run
	ByStatus       map[string]int `json:"by_status,omitempty"` // orders fetched and mapped, by their status upstream
	Conflicts      int            `json:"conflicts"`           // see SyncConflict
	UpstreamErrors int            `json:"upstream_errors"`     // calls that failed, answers that did not map
	Requests       int64          `json:"requests"`            // HTTP requests to the CA, retries included
	Retries        int64          `json:"retries"`
	LimiterWait    time.Duration  `json:"limiter_wait"` // time spent waiting on the client's rate limiter
	// Incomplete: the run stopped at its bound of Order info fetches; the
	// cursor stays, and the next run continues.
	Incomplete bool `json:"incomplete,omitempty"`
	// Resume is where an incremental run that did not finish left off,
	// for the next run over the same window.
	Resume *SyncResume `json:"resume,omitempty"`
}

// SyncResume says how far an incremental run that did not finish got: of
// the orders whose status changed since the cursor, those numbered up to
// After were fetched at Since or later (they were fetched in order). The
// next run fetches those again only if their status changed since Since.
type SyncResume struct {
	After int64     `json:"after"`
	Since time.Time `json:"since"`
}

// SyncRun is one run of the sync as the store keeps it.
type SyncRun struct {
	ID       int64
	Started  time.Time
	Finished time.Time
	Instance string // host and process that ran it
	OK       bool
	Error    string // why it failed; never holds a secret
	Summary  SyncSummary
	// Cursor is where the next incremental run starts: the start of this
	// run. The store keeps it only when the run succeeded.
	Cursor time.Time
}

// SyncState is the sync's state: its cursor (zero before the first
// successful run) and the last runs, newest first.
type SyncState struct {
	Cursor time.Time
	Runs   []SyncRun
}

// SyncLock is held by the one sync running on a store.
type SyncLock interface {
	// Check reports an error if the lock may have been lost (its database
	// session ended), so that the sync stops before another one starts.
	Check(ctx context.Context) error
	// Release lets another sync run.
	Release()
}

// SyncStore is what the CertCentral sync needs of a store.
type SyncStore interface {
	// LinkContainer ties the member to a division. ErrNotFound if there is
	// no such member, ErrConflict if the division is another member's;
	// linking it again to the same member changes nothing.
	LinkContainer(ctx context.Context, member string, container int64) error
	// UnlinkContainer removes a link; ErrNotFound if there is none. The
	// member keeps the orders it has.
	UnlinkContainer(ctx context.Context, member string, container int64) error
	// ContainerLinks lists every link, by member name then division.
	ContainerLinks(ctx context.Context) ([]certorder.ContainerLink, error)

	// KnownOrders returns what the store holds of each of the orders,
	// stored or unassigned; orders it does not hold are absent.
	KnownOrders(ctx context.Context, ids []int64) (map[int64]KnownOrder, error)
	// UnassignedOrders returns up to limit unassigned orders numbered above
	// afterID, in order; with adoptable, only those a member could now take:
	// in a linked division, or renewing a stored order.
	UnassignedOrders(ctx context.Context, adoptable bool, afterID int64, limit int) ([]UpstreamOrder, error)
	// UnassignedRefs lists every unassigned order by division, then number.
	UnassignedRefs(ctx context.Context) ([]UpstreamRef, error)

	// LockSync takes the sync lock if it is free: ok is false when another
	// sync holds it. The lock ends with the process that holds it.
	LockSync(ctx context.Context) (lock SyncLock, ok bool, err error)
	// SyncState returns the cursor and the last runs (at most runs of them).
	SyncState(ctx context.Context, runs int) (SyncState, error)
	// RecordSyncRun keeps a run; a successful one moves the cursor to its
	// Cursor. Only the latest MaxSyncRuns runs are kept.
	RecordSyncRun(ctx context.Context, run SyncRun) error
}

// MaxSyncRuns is how many runs a store keeps.
const MaxSyncRuns = 100
