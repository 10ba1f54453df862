package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
)

// findCertificates reads the certificates whose serial or thumbprint
// look-up form is in the arrays $1 and $2, of member $3 unless it is 0.
// Each key is looked up in its partial index (the terms that the key is not empty let the
// planner use it); the member is a join condition, so that another
// member's certificate costs the look-up an unknown one costs.
const findCertificates = `SELECT ` + historyColumns + `, member_id, member, order_status, current FROM (
	SELECT c.*, o.member_id, m.name AS member, o.status AS order_status,
		NOT EXISTS (SELECT 1 FROM order_certificates l WHERE l.order_id = c.order_id AND l.seq > c.seq
			AND l.serial_number <> '') AS current
	FROM order_certificates c JOIN orders o ON o.id = c.order_id JOIN members m ON m.id = o.member_id
	WHERE c.seq IN (
		SELECT seq FROM order_certificates WHERE serial_key = ANY($1) AND serial_key <> ''
		UNION
		SELECT seq FROM order_certificates WHERE thumbprint_key = ANY($2) AND thumbprint_key <> '')
	AND ($3::BIGINT = 0 OR o.member_id = $3)) f
ORDER BY order_id, seq`

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

// nonNil is keys, or an empty array for none (a nil slice is NULL, and
// "= ANY(NULL)" is NULL, not false: the same rows, but said plainly).
func nonNil(keys []string) []string {
	if keys == nil {
		return []string{}
	}
	return keys
}
