package sqlite

import (
	"context"
	"database/sql"

	"github.com/certorder/certorder/internal/storekit"
)

// querier is a transaction or the read pool.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// orderMembers is the member of each of the orders ids, which must be
// stored: a history entry is written with its order's member (the index
// FindCertificates looks a member's certificates up in).
func orderMembers(ctx context.Context, q querier, ids []int64) (map[int64]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT id, member_id FROM orders WHERE id IN (SELECT value FROM json_each(?))`, idsJSON(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	members := make(map[int64]int64, len(ids))
	for rows.Next() {
		var id, member int64
		if err := rows.Scan(&id, &member); err != nil {
			return nil, err
		}
		members[id] = member
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return members, storekit.CheckMembers(ids, members)
}
