package sqlite

import (
	"context"
	"encoding/json"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// findCertificates reads the certificates whose serial or thumbprint look-up
// form is among the keys ?1 and ?2, of member ?3 unless it is 0 (storekit.FindCertificates).
var findCertificates = storekit.FindCertificates(historyColumns, "%s IN (SELECT value FROM json_each(?1))", "%s IN (SELECT value FROM json_each(?2))", "?3")

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
