package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder/internal/storekit"
)

// orderMembers is the member of each of the orders ids, which must be
// stored: a history entry is written with its order's member (the index
// FindCertificates looks a member's certificates up in).
func orderMembers(ctx context.Context, q querier, ids []int64) (map[int64]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, _ := q.Query(ctx, `SELECT id, member_id FROM orders WHERE id = ANY($1)`, ids)
	members := make(map[int64]int64, len(ids))
	var id, member int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &member}, func() error {
		members[id] = member
		return nil
	}); err != nil {
		return nil, err
	}
	return members, storekit.CheckMembers(ids, members)
}

// nonNil is xs, or an empty array for none (a nil slice is NULL, and
// "= ANY(NULL)" is NULL, not false; "<> ALL(NULL)" is NULL, not true; and
// pgx encodes a NULL parameter as no bytes).
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
