package certorder

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The CertCentral sync (package ccsync) keeps the store in step with the
// CA. What it needs of a store is the role SyncStore; the rules it writes
// by are here, written once: ApplyUpstream decides which member owns each
// upstream order and stores it through the same checks as ImportOrders.

// ContainerLink ties a member to a division (a CertCentral container) of
// the reseller's CA account: the sync gives the member the orders placed in
// it. A division is linked to at most one member.
type ContainerLink struct {
	Container int64
	MemberID  int64
	Member    string
	CreatedAt time.Time
}

// UpstreamOrder is an order as the sync found it at the CA: the order to
// store, parsed from the spec's document (its RenewedBy is the CA's renewal
// relation), and the division it sits in.
type UpstreamOrder struct {
	Order     *Order
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

// OrderChange is what a write did to one of a member's orders. It is what
// the audit trail records of a sync, and what an event would be made of.
type OrderChange struct {
	OrderID           int64
	MemberID          int64
	Added             bool // the member did not have the order before
	Adopted           bool // Added, and it was unassigned before
	PreviousStatus    string
	Status            string
	PreviousRenewedBy int64
	RenewedBy         int64
}

// StatusChanged reports a change of status of an order the member had.
func (c OrderChange) StatusChanged() bool { return !c.Added && c.PreviousStatus != c.Status }

// RenewalLinked reports that the write recorded the order's renewal.
func (c OrderChange) RenewalLinked() bool {
	return c.RenewedBy != 0 && c.RenewedBy != c.PreviousRenewedBy
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

// SyncResult is what ApplyUpstream did, or in a dry run would have done.
type SyncResult struct {
	Changes    []OrderChange
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
	Unassigned     int            `json:"unassigned"`          // orders unassigned after the run
	ByStatus       map[string]int `json:"by_status,omitempty"` // orders fetched and mapped, by their status upstream
	Conflicts      int            `json:"conflicts"`           // see SyncConflict
	UpstreamErrors int            `json:"upstream_errors"`     // calls that failed, answers that did not map
	Requests       int64          `json:"requests"`            // HTTP requests to the CA, retries included
	Retries        int64          `json:"retries"`
	LimiterWait    time.Duration  `json:"limiter_wait"` // time spent waiting on the client's rate limiter
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
	ContainerLinks(ctx context.Context) ([]ContainerLink, error)

	// KnownOrders returns what the store holds of each of the orders,
	// stored or unassigned; orders it does not hold are absent.
	KnownOrders(ctx context.Context, ids []int64) (map[int64]KnownOrder, error)
	// InSyncTx runs fn in one transaction of the store, committed when fn
	// returns nil and rolled back when it returns an error, which InSyncTx
	// returns (classified as every store error is). ApplyBatch is its use.
	InSyncTx(ctx context.Context, fn func(SyncTx) error) error
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

// SyncTx is a store's transaction as ApplyUpstream uses it; its reads see
// its own writes.
type SyncTx interface {
	// Link reads a stored order's owner and renewal; ErrNotFound if none.
	Link(ctx context.Context, id int64) (OrderLink, error)
	// StoredOrder reads a stored order (MemberID, Status, RenewedBy, Doc);
	// ErrNotFound if none.
	StoredOrder(ctx context.Context, id int64) (*Order, error)
	// RenewedFrom returns the lowest-numbered stored order renewed by id,
	// and its member; 0, 0 if none.
	RenewedFrom(ctx context.Context, id int64) (oldID, memberID int64, err error)
	// RenewedFromOther returns a stored order of another member than
	// memberID that is renewed by id; 0 if none.
	RenewedFromOther(ctx context.Context, id, memberID int64) (int64, error)
	// ContainerMember returns the member linked to the division; 0 if none.
	ContainerMember(ctx context.Context, container int64) (int64, error)
	// UnassignedOrder reads an unassigned order; ErrNotFound if none.
	UnassignedOrder(ctx context.Context, id int64) (*UpstreamOrder, error)
	// SaveOrder stores o for the member with the renewal relation
	// renewedBy, as ImportOrders stores an order it has checked.
	SaveOrder(ctx context.Context, memberID int64, o *Order, renewedBy int64) error
	// SaveUnassigned stores u as unassigned; DeleteUnassigned forgets one
	// (deleting one that is not there is not an error).
	SaveUnassigned(ctx context.Context, u UpstreamOrder) error
	DeleteUnassigned(ctx context.Context, id int64) error
}

// SyncTxRunner runs sync transactions: a SyncStore, or a SyncDryRun in
// front of one.
type SyncTxRunner interface {
	InSyncTx(ctx context.Context, fn func(SyncTx) error) error
}

// ApplyBatch stores a batch of upstream orders in one transaction of s, by
// the rules of ApplyUpstream: all of them, or, on an error, none.
func ApplyBatch(ctx context.Context, s SyncTxRunner, orders []UpstreamOrder) (SyncResult, error) {
	var res SyncResult
	err := s.InSyncTx(ctx, func(tx SyncTx) error {
		var err error
		res, err = ApplyUpstream(ctx, tx, orders)
		return err
	})
	return res, err
}

// ApplyUpstream stores upstream orders inside a store's transaction, in
// order of their numbers, so that an order comes before its renewals. The
// owner of each order is, in this order of precedence:
//
//  1. the member that has it already: a sync never moves an order;
//  2. for a renewal of a stored order (one whose renewal relation names
//     it), the member of that order, whatever division the renewal sits in;
//  3. the member linked to the order's division;
//  4. nobody: the order is kept aside, unassigned, visible to no member,
//     until a later run finds it an owner by rules 2 or 3.
//
// An owned order is checked as ImportOrders checks one (CheckImport): the
// renewal relation stays within one member and never makes a cycle, and is
// never dropped. Where the CA's data breaks those rules the order keeps
// what the store has and a SyncConflict says why; so does an order whose
// division is linked to another member than its owner (unless it is the
// renewal of one of its owner's orders, as rule 2 wants). Writing an order
// that has not changed is skipped, so that running a batch twice changes
// nothing the second time.
func ApplyUpstream(ctx context.Context, tx SyncTx, orders []UpstreamOrder) (SyncResult, error) {
	sorted := slices.Clone(orders)
	slices.SortFunc(sorted, func(a, b UpstreamOrder) int { return cmp.Compare(a.Order.ID, b.Order.ID) })
	var res SyncResult
	for i, u := range sorted {
		if u.Order == nil || u.Order.ID <= 0 {
			return res, fmt.Errorf("%w: upstream order %d of the batch has no order number", ErrInvalid, i+1)
		}
		if i > 0 && sorted[i-1].Order.ID == u.Order.ID {
			return res, fmt.Errorf("%w: order %d appears twice in the batch", ErrInvalid, u.Order.ID)
		}
		if err := applyOne(ctx, tx, u, &res); err != nil {
			return res, fmt.Errorf("order %d: %w", u.Order.ID, err)
		}
	}
	return res, nil
}

func applyOne(ctx context.Context, tx SyncTx, u UpstreamOrder, res *SyncResult) error {
	o := u.Order
	existing, err := tx.StoredOrder(ctx, o.ID)
	switch {
	case err == nil:
		return saveOwned(ctx, tx, existing.MemberID, existing, false, u, res)
	case !errors.Is(err, ErrNotFound):
		return err
	}
	owner, err := upstreamOwner(ctx, tx, u)
	if err != nil {
		return err
	}
	unassigned, err := tx.UnassignedOrder(ctx, o.ID)
	if errors.Is(err, ErrNotFound) {
		unassigned, err = nil, nil
	}
	if err != nil {
		return err
	}
	if owner != 0 {
		return saveOwned(ctx, tx, owner, nil, unassigned != nil, u, res)
	}
	res.Unassigned = append(res.Unassigned, UpstreamRef{ID: o.ID, Container: u.Container})
	if unassigned != nil && unassigned.Container == u.Container && unassigned.Order.RenewedBy == o.RenewedBy &&
		unassigned.Order.docSum() == o.docSum() {
		res.Unchanged++
		return nil
	}
	return tx.SaveUnassigned(ctx, u)
}

// upstreamOwner applies ownership rules 2 and 3 to an order not stored.
func upstreamOwner(ctx context.Context, tx SyncTx, u UpstreamOrder) (int64, error) {
	_, member, err := tx.RenewedFrom(ctx, u.Order.ID)
	if err != nil || member != 0 {
		return member, err
	}
	return tx.ContainerMember(ctx, u.Container)
}

// saveOwned stores an order for its owner; existing is the stored order,
// nil for one the member does not have yet.
func saveOwned(ctx context.Context, tx SyncTx, owner int64, existing *Order, wasUnassigned bool,
	u UpstreamOrder, res *SyncResult) error {
	o := u.Order
	conflict := func(other int64, reason string) {
		res.Conflicts = append(res.Conflicts, SyncConflict{OrderID: o.ID, MemberID: owner, Other: other, Reason: reason})
	}
	if existing != nil {
		claimed, err := tx.ContainerMember(ctx, u.Container)
		if err != nil {
			return err
		}
		if claimed != 0 && claimed != owner {
			_, from, err := tx.RenewedFrom(ctx, o.ID)
			if err != nil {
				return err
			}
			if from != owner {
				conflict(claimed, fmt.Sprintf("its division %d is linked to another member; the order stays where it is", u.Container))
			}
		}
	}
	renewedFromOther := func(ctx context.Context, id int64) (int64, error) { return tx.RenewedFromOther(ctx, id, owner) }
	renewedBy, err := CheckImport(ctx, owner, o, tx.Link, renewedFromOther)
	if errors.Is(err, ErrConflict) && o.RenewedBy != 0 {
		// The CA's renewal relation breaks the rules: store the rest of
		// the order with the relation the store has.
		conflict(0, fmt.Sprintf("the CA says order %d renewed it; not recorded: %v", o.RenewedBy, err))
		plain := *o
		plain.RenewedBy = 0
		renewedBy, err = CheckImport(ctx, owner, &plain, tx.Link, renewedFromOther)
	}
	if errors.Is(err, ErrConflict) {
		conflict(0, fmt.Sprintf("not stored: %v", err))
		return nil
	}
	if err != nil {
		return err
	}
	if existing != nil && existing.RenewedBy == renewedBy && existing.docSum() == o.docSum() {
		res.Unchanged++
		return tx.DeleteUnassigned(ctx, o.ID) // an order imported by hand while it was unassigned
	}
	if err := tx.SaveOrder(ctx, owner, o, renewedBy); err != nil {
		return err
	}
	if err := tx.DeleteUnassigned(ctx, o.ID); err != nil {
		return err
	}
	change := OrderChange{OrderID: o.ID, MemberID: owner, Added: existing == nil, Adopted: existing == nil && wasUnassigned,
		Status: o.Status, RenewedBy: renewedBy}
	if existing != nil {
		change.PreviousStatus, change.PreviousRenewedBy = existing.Status, existing.RenewedBy
	}
	res.Changes = append(res.Changes, change)
	return nil
}
