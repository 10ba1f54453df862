package sqlite

import (
	"context"
	"encoding/json"

	"github.com/certorder/certorder"
)

// findCertificates reads the certificates whose serial or thumbprint look-up
// form is among the JSON arrays ?1 and ?2, of member ?3 unless it is 0.
// Each key is looked up in its partial index (the terms that the key is not empty let the
// planner use it); the member is a join condition, so that another
// member's certificate costs the look-up an unknown one costs.
const findCertificates = `SELECT ` + historyColumns + `, member_id, member, order_status, current FROM (
	SELECT c.*, o.member_id, m.name AS member, o.status AS order_status,
		NOT EXISTS (SELECT 1 FROM order_certificates l WHERE l.order_id = c.order_id AND l.seq > c.seq
			AND l.serial_number <> '') AS current
	FROM order_certificates c JOIN orders o ON o.id = c.order_id JOIN members m ON m.id = o.member_id
	WHERE c.seq IN (
		SELECT seq FROM order_certificates WHERE serial_key IN (SELECT value FROM json_each(?1)) AND serial_key <> ''
		UNION
		SELECT seq FROM order_certificates WHERE thumbprint_key IN (SELECT value FROM json_each(?2)) AND thumbprint_key <> '')
	AND (?3 = 0 OR o.member_id = ?3))
ORDER BY order_id, seq`

// FindCertificates finds certificates by serial number or thumbprint.
func (s *Store) FindCertificates(ctx context.Context, q certorder.CertificateQuery) ([]certorder.CertificateMatch, error) {
	rows, err := s.read.QueryContext(ctx, findCertificates, stringsJSON(q.Serials), stringsJSON(q.Thumbprints), q.MemberID)
	if err != nil {
		return nil, s.wrap("find certificates", err)
	}
	defer rows.Close()
	var out []certorder.CertificateMatch
	for rows.Next() {
		var m certorder.CertificateMatch
		if err := scanEntry(rows, &m.CertificateEntry, &m.MemberID, &m.Member, &m.OrderStatus, &m.Current); err != nil {
			return nil, s.wrap("find certificates", err)
		}
		out = append(out, m)
	}
	return out, s.wrap("find certificates", rows.Err())
}

// stringsJSON is keys as a JSON array for json_each ("[]" for none). The
// keys are hexadecimal (ParseSerial, ParseThumbprint), but marshalled all
// the same.
func stringsJSON(keys []string) string {
	if len(keys) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(keys) // a []string always marshals
	return string(b)
}
