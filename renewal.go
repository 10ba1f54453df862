package certorder

import (
	"context"
	"errors"
	"fmt"
)

// MaxRenewalChain bounds how far a renewal chain is followed, by the cycle
// check here and by clients that walk to the newest order.
const MaxRenewalChain = 1000

// OrderLink is what CheckRenewal needs to know of one stored order, and its
// status, which an import that changes it tells in an event.
type OrderLink struct {
	MemberID  int64
	RenewedBy int64
	Status    string
}

// CheckRenewal says whether order newID may be recorded as the renewal of
// order oldID, which belongs to memberID: the two differ; newID, if stored,
// belongs to the same member; and following renewals from newID never comes
// back to oldID. lookup reads one order inside the caller's transaction and
// returns ErrNotFound for an order that is not stored.
//
// Both stores call it, so that the rule is written once.
func CheckRenewal(ctx context.Context, memberID, oldID, newID int64,
	lookup func(ctx context.Context, id int64) (OrderLink, error)) error {
	if oldID == newID {
		return fmt.Errorf("%w: order %d cannot renew itself", ErrInvalid, oldID)
	}
	id := newID
	for range MaxRenewalChain {
		link, err := lookup(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if id == newID && link.MemberID != memberID {
			return fmt.Errorf("%w: orders %d and %d belong to different members", ErrConflict, oldID, newID)
		}
		if link.RenewedBy == 0 {
			return nil
		}
		if link.RenewedBy == oldID {
			return fmt.Errorf("%w: order %d renewing order %d would make a cycle", ErrConflict, newID, oldID)
		}
		id = link.RenewedBy
	}
	return fmt.Errorf("%w: renewal chain from order %d is longer than %d", ErrConflict, newID, MaxRenewalChain)
}

// CheckRecordRenewal checks a renewal an operator records (Store.RecordRenewal):
// both orders are stored, oldID is not renewed by another order already, and
// CheckRenewal passes. It reports false when the relation is recorded already,
// so that recording it again changes nothing.
func CheckRecordRenewal(ctx context.Context, oldID, newID int64,
	lookup func(ctx context.Context, id int64) (OrderLink, error)) (bool, error) {
	old, err := lookup(ctx, oldID)
	if err != nil {
		return false, err
	}
	if _, err := lookup(ctx, newID); err != nil {
		return false, err
	}
	switch old.RenewedBy {
	case newID:
		return false, nil
	case 0:
		return true, CheckRenewal(ctx, old.MemberID, oldID, newID, lookup)
	}
	return false, fmt.Errorf("%w: order %d is already renewed by order %d", ErrConflict, oldID, old.RenewedBy)
}

// CheckImport checks an order about to be imported for memberID and returns
// the renewal to store with it: the one its document names, or else the one
// already recorded (an import adds renewal relations, it never drops one).
// An order of another member is never replaced, and no order of another
// member may name this one as its renewal. renewedFromOther returns such an
// order's number, 0 if there is none.
func CheckImport(ctx context.Context, memberID int64, o *Order,
	lookup func(ctx context.Context, id int64) (OrderLink, error),
	renewedFromOther func(ctx context.Context, id int64) (int64, error)) (int64, error) {
	existing, err := lookup(ctx, o.ID)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return 0, err
	case existing.MemberID != memberID:
		return 0, fmt.Errorf("%w: order %d belongs to another member", ErrConflict, o.ID)
	}
	renewedBy := o.RenewedBy
	if renewedBy == 0 {
		renewedBy = existing.RenewedBy
	}
	if renewedBy != 0 {
		if err := CheckRenewal(ctx, memberID, o.ID, renewedBy, lookup); err != nil {
			return 0, err
		}
	}
	other, err := renewedFromOther(ctx, o.ID)
	if err != nil {
		return 0, err
	}
	if other != 0 {
		return 0, fmt.Errorf("%w: order %d of another member names order %d as its renewal", ErrConflict, other, o.ID)
	}
	return renewedBy, nil
}
