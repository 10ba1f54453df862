package storekit

import (
	"context"
	"fmt"
	"strings"

	"github.com/certorder/certorder"
)

// The reads of a member's orders both stores make alike (the web page's
// list, the next steps' pages, the renewal chain); the hot path's reads
// and the orders' writes are each store's.

// orderFilter is the WHERE clause of an OrderQuery (alias o) and its
// arguments, in their order.
func (k *Kit) orderFilter(q certorder.OrderQuery) (string, []any) {
	where := []string{"o.member_id = ?"}
	args := []any{q.MemberID}
	arg := func(v any) string {
		args = append(args, v)
		return "?"
	}
	if cond := OrderSearch(q, k.Contains, arg); cond != "" {
		where = append(where, cond)
	}
	if q.AfterID != 0 {
		where = append(where, "o.id > "+arg(q.AfterID))
	}
	return strings.Join(where, " AND "), args
}

// renewsColumn is Order.Renews: the lowest-numbered order of the member
// that the order renewed (through the index on renewed_by), 0 if none.
const renewsColumn = `COALESCE((SELECT MIN(r.id) FROM orders r WHERE r.renewed_by = o.id AND r.member_id = o.member_id), 0)`

// ListOrders returns a page of a member's orders.
func (k *Kit) ListOrders(ctx context.Context, q certorder.OrderQuery) ([]*certorder.Order, error) {
	where, args := k.orderFilter(q)
	var limit any = q.Limit
	if q.Limit <= 0 {
		limit = k.NoLimit
	}
	// Renews is read for the page's rows only, not for those the offset skips.
	os, err := Query(ctx, k.Read, func(row Row) (*certorder.Order, error) {
		var n OrderRow
		var l Lifecycle
		var renews int64
		if err := row.Scan(append(append(n.Dest(), l.Dest()...), &renews)...); err != nil {
			return nil, err
		}
		o, err := n.Order()
		if o != nil {
			l.Fill(o)
			o.Renews = renews
		}
		return o, err
	}, `SELECT `+OrderColumns+`, `+LifecycleColumns+`, `+renewsColumn+` FROM (SELECT * FROM orders o WHERE `+where+
		` ORDER BY `+OrderSorts[q.Sort]+` LIMIT ? OFFSET ?) o`+LifecycleJoin+` ORDER BY `+OrderSorts[q.Sort],
		append(args, limit, max(q.Offset, 0))...)
	return os, k.Wrap("list orders", err)
}

// CountOrders counts a member's orders.
func (k *Kit) CountOrders(ctx context.Context, q certorder.OrderQuery) (int, error) {
	where, args := k.orderFilter(q)
	var n int
	err := k.Read.QueryRow(ctx, `SELECT COUNT(*) FROM orders o WHERE `+where, args...).Scan(&n)
	return n, k.Wrap("count orders", err)
}

// Lifecycles reads a page of every member's orders' lifecycles.
func (k *Kit) Lifecycles(ctx context.Context, afterID int64, limit int) ([]OrderLifecycle, error) {
	out, err := Query(ctx, k.Read, func(row Row) (OrderLifecycle, error) {
		var o certorder.Order
		var l Lifecycle
		err := row.Scan(append([]any{&o.ID, &o.Status, &o.Certificate.ValidTill, &o.RenewedBy}, l.Dest()...)...)
		l.Fill(&o)
		return OrderLifecycle{ID: o.ID, Lifecycle: o.Lifecycle()}, err
	}, `SELECT o.id, o.status, o.valid_till, COALESCE(o.renewed_by, 0), `+LifecycleColumns+`
		FROM orders o`+LifecycleJoin+` WHERE o.id > ? ORDER BY o.id LIMIT ?`, afterID, limit)
	return out, k.Wrap("lifecycles", err)
}

// RenewalChain returns the renewal chain through an order of the member.
func (k *Kit) RenewalChain(ctx context.Context, memberID, id int64) ([]certorder.ChainLink, error) {
	chain, err := WalkChain(ctx, id, func(ctx context.Context, id int64) (certorder.ChainLink, error) {
		l := certorder.ChainLink{ID: id}
		err := k.Read.QueryRow(ctx, `SELECT status, valid_till, COALESCE(renewed_by, 0) FROM orders WHERE id = ? AND member_id = ?`,
			id, memberID).Scan(&l.Status, &l.ValidTill, &l.RenewedBy)
		return l, notFound(err, fmt.Sprintf("order %d", id))
	}, func(ctx context.Context, id int64) (int64, error) {
		var old int64
		err := k.Read.QueryRow(ctx, `SELECT COALESCE(MIN(id), 0) FROM orders WHERE renewed_by = ? AND member_id = ?`, id, memberID).Scan(&old)
		return old, err
	})
	return chain, k.Wrap("renewal chain", err)
}
