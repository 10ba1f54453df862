package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// findCertificates reads the certificates whose serial or thumbprint look-up
// form is among the keys $1 and $2, of member $3 unless it is 0 (storekit.FindCertificates).
var findCertificates = storekit.FindCertificates(historyColumns, "%s = ANY($1)", "%s = ANY($2)", "$3::BIGINT")

// FindCertificates finds certificates by serial number or thumbprint (the
// API's read: once more on a reset pool when its connection was gone).
func (s *Store) FindCertificates(ctx context.Context, q certorder.CertificateQuery) ([]certorder.CertificateMatch, error) {
	var out []certorder.CertificateMatch
	err := s.read(ctx, func() error {
		out = nil
		rows, _ := s.pool.Query(ctx, findCertificates, nonNil(q.Serials), nonNil(q.Thumbprints), q.MemberID)
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

// nonNil is xs, or an empty array for none (a nil slice is NULL, and
// "= ANY(NULL)" is NULL, not false; "<> ALL(NULL)" is NULL, not true).
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
