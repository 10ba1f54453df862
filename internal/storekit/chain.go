package storekit

import (
	"context"
	"errors"

	"github.com/certorder/certorder"
)

// WalkChain builds the renewal chain through order id, oldest first: back
// through the orders it renewed, forward through the orders that renewed
// it, at most certorder.MaxRenewalChain links each way, never looping. link reads an
// order (certorder.ErrNotFound for one that is not the member's: the chain stops
// before it, and the order id itself must be found); renewedFrom returns
// the lowest-numbered order renewed by id, 0 if none.
//
// Both stores call it, so that the walk is written once.
func WalkChain(ctx context.Context, id int64,
	link func(ctx context.Context, id int64) (certorder.ChainLink, error),
	renewedFrom func(ctx context.Context, id int64) (int64, error)) ([]certorder.ChainLink, error) {
	this, err := link(ctx, id)
	if err != nil {
		return nil, err
	}
	seen := map[int64]bool{id: true}
	var back []certorder.ChainLink
	for cur := id; len(back) < certorder.MaxRenewalChain; {
		old, err := renewedFrom(ctx, cur)
		if err != nil {
			return nil, err
		}
		if old == 0 || seen[old] {
			break
		}
		l, err := link(ctx, old)
		if err != nil {
			return nil, err
		}
		seen[old] = true
		back = append(back, l)
		cur = old
	}
	chain := make([]certorder.ChainLink, 0, len(back)+1)
	for i := len(back) - 1; i >= 0; i-- {
		chain = append(chain, back[i])
	}
	chain = append(chain, this)
	for cur := this; cur.RenewedBy != 0 && !seen[cur.RenewedBy] && len(chain) <= len(back)+certorder.MaxRenewalChain; {
		next, err := link(ctx, cur.RenewedBy)
		if errors.Is(err, certorder.ErrNotFound) {
			// Renewed by an order not stored (yet): the chain ends with its number.
			chain = append(chain, certorder.ChainLink{ID: cur.RenewedBy})
			break
		}
		if err != nil {
			return nil, err
		}
		seen[next.ID] = true
		chain = append(chain, next)
		cur = next
	}
	return chain, nil
}

// OrderLifecycle is one order's certorder.Lifecycle.
type OrderLifecycle struct {
	ID int64
	certorder.Lifecycle
}
