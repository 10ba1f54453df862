package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// findCertificates reads the certificates whose serial or thumbprint look-up
// form is among the keys $1 and $2: of member $3 (memberCertificates), or
// of every member (storekit.FindCertificates).
var (
	memberCertificates = storekit.FindCertificates(historyColumns, "%s = ANY($1)", "%s = ANY($2)", "$3::BIGINT")
	allCertificates    = storekit.FindCertificates(historyColumns, "%s = ANY($1)", "%s = ANY($2)", "")
)

// FindCertificates finds certificates by serial number or thumbprint (the
// API's read: once more on a reset pool when its connection was gone).
func (s *Store) FindCertificates(ctx context.Context, q certorder.CertificateQuery) ([]certorder.CertificateMatch, error) {
	query, args := allCertificates, []any{nonNil(q.Serials), nonNil(q.Thumbprints)}
	if q.MemberID != 0 {
		query, args = memberCertificates, append(args, q.MemberID)
	}
	var out []certorder.CertificateMatch
	err := s.read(ctx, func() error {
		out = nil
		rows, _ := s.pool.Query(ctx, query, args...)
		var m certorder.CertificateMatch
		var names string
		_, err := pgx.ForEachRow(rows, append(entryDest(&m.CertificateEntry, &names), &m.MemberID, &m.Member, &m.OrderStatus,
			&m.Current), func() error {
			m.DNSNames = nil
			if err := json.Unmarshal([]byte(names), &m.DNSNames); err != nil {
				return err
			}
			out = append(out, m)
			return nil
		})
		return err
	})
	return out, s.wrap("find certificates", err)
}

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
