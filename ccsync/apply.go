package ccsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// ApplyBatch stores a batch of upstream orders in one transaction of s, by
// the rules of ApplyUpstream: all of them, or, on an error, none.
func ApplyBatch(ctx context.Context, s storekit.SyncTxRunner, orders []storekit.UpstreamOrder) (storekit.SyncResult, error) {
	var res storekit.SyncResult
	err := s.InSyncTx(ctx, func(tx storekit.SyncTx) error {
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
// An owned order is checked as ImportOrders checks one
// (certorder.CheckImport): the renewal relation stays within one member and
// never makes a cycle, and is never dropped. Where the CA's data breaks
// those rules the order keeps what the store has and a SyncConflict says
// why; so does an order whose division is linked to another member than
// its owner (unless it is the renewal of one of its owner's orders, as rule
// 2 wants). Writing an order that has not changed is skipped, so that
// running a batch twice changes nothing the second time. A stored order
// whose status changed, that was renewed or that has a newly issued
// certificate gets its events (certorder.OrderChange.Events) in the same
// transaction, and every saved order's current certificate is recorded in
// its history (storekit.RecordCertificates).
func ApplyUpstream(ctx context.Context, tx storekit.SyncTx, orders []storekit.UpstreamOrder) (storekit.SyncResult, error) {
	sorted := slices.Clone(orders)
	slices.SortFunc(sorted, func(a, b storekit.UpstreamOrder) int { return cmp.Compare(a.Order.ID, b.Order.ID) })
	var res storekit.SyncResult
	for i, u := range sorted {
		if u.Order == nil || u.Order.ID <= 0 {
			return res, fmt.Errorf("%w: upstream order %d of the batch has no order number", certorder.ErrInvalid, i+1)
		}
		if i > 0 && sorted[i-1].Order.ID == u.Order.ID {
			return res, fmt.Errorf("%w: order %d appears twice in the batch", certorder.ErrInvalid, u.Order.ID)
		}
		if err := applyOne(ctx, tx, u, &res); err != nil {
			return res, fmt.Errorf("order %d: %w", u.Order.ID, err)
		}
	}
	return res, nil
}

func applyOne(ctx context.Context, tx storekit.SyncTx, u storekit.UpstreamOrder, res *storekit.SyncResult) error {
	o := u.Order
	existing, err := tx.StoredOrder(ctx, o.ID)
	switch {
	case err == nil:
		return saveOwned(ctx, tx, existing.MemberID, existing, false, u, res)
	case !errors.Is(err, certorder.ErrNotFound):
		return err
	}
	owner, err := upstreamOwner(ctx, tx, u)
	if err != nil {
		return err
	}
	unassigned, err := tx.UnassignedOrder(ctx, o.ID)
	if errors.Is(err, certorder.ErrNotFound) {
		unassigned, err = nil, nil
	}
	if err != nil {
		return err
	}
	if owner != 0 {
		return saveOwned(ctx, tx, owner, nil, unassigned != nil, u, res)
	}
	res.Unassigned = append(res.Unassigned, storekit.UpstreamRef{ID: o.ID, Container: u.Container})
	if unassigned != nil && unassigned.Container == u.Container && unassigned.Order.RenewedBy == o.RenewedBy &&
		sameDoc(tx, unassigned.Order, o) {
		res.Unchanged++
		return nil
	}
	return tx.SaveUnassigned(ctx, u)
}

// upstreamOwner applies ownership rules 2 and 3 to an order not stored.
func upstreamOwner(ctx context.Context, tx storekit.SyncTx, u storekit.UpstreamOrder) (int64, error) {
	_, member, err := tx.RenewedFrom(ctx, u.Order.ID)
	if err != nil || member != 0 {
		return member, err
	}
	return tx.ContainerMember(ctx, u.Container)
}

// saveOwned stores an order for its owner; existing is the stored order,
// nil for one the member does not have yet.
func saveOwned(ctx context.Context, tx storekit.SyncTx, owner int64, existing *certorder.Order, wasUnassigned bool,
	u storekit.UpstreamOrder, res *storekit.SyncResult) error {
	o := u.Order
	conflict := func(other int64, reason string) {
		res.Conflicts = append(res.Conflicts, storekit.SyncConflict{OrderID: o.ID, MemberID: owner, Other: other, Reason: reason})
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
	renewedBy, err := certorder.CheckImport(ctx, owner, o, tx.Link, renewedFromOther)
	if errors.Is(err, certorder.ErrConflict) && o.RenewedBy != 0 {
		// The CA's renewal relation breaks the rules: store the rest of
		// the order with the relation the store has.
		conflict(0, fmt.Sprintf("the CA says order %d renewed it; not recorded: %v", o.RenewedBy, err))
		plain := *o
		plain.RenewedBy = 0
		renewedBy, err = certorder.CheckImport(ctx, owner, &plain, tx.Link, renewedFromOther)
	}
	if errors.Is(err, certorder.ErrConflict) {
		conflict(0, fmt.Sprintf("not stored: %v", err))
		return nil
	}
	if err != nil {
		return err
	}
	if existing != nil && existing.RenewedBy == renewedBy && sameDoc(tx, existing, o) {
		res.Unchanged++
		return tx.DeleteUnassigned(ctx, o.ID) // an order imported by hand while it was unassigned
	}
	// The history first: it reads the certificate the stored order holds.
	reissues, err := storekit.RecordCertificates(ctx, tx, []*certorder.Order{o})
	if err != nil {
		return err
	}
	if err := tx.SaveOrder(ctx, owner, o, renewedBy); err != nil {
		return err
	}
	if err := tx.DeleteUnassigned(ctx, o.ID); err != nil {
		return err
	}
	change := certorder.OrderChange{OrderID: o.ID, MemberID: owner, Added: existing == nil, Adopted: existing == nil && wasUnassigned,
		Status: o.Status, RenewedBy: renewedBy, Reissue: reissues[o.ID]}
	if existing != nil {
		change.PreviousStatus, change.PreviousRenewedBy = existing.Status, existing.RenewedBy
	}
	if err := tx.AddEvents(ctx, change.Events(time.Now())); err != nil {
		return err
	}
	res.Changes = append(res.Changes, change)
	return nil
}
