package sqlite

import (
	"context"
	"encoding/json"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// findCertificates reads the certificates whose serial or thumbprint look-up
// form is among the keys ?1 and ?2: of member ?3 (memberCertificates), or
// of every member (storekit.FindCertificates).
var (
	memberCertificates = storekit.FindCertificates(historyColumns, "%s IN (SELECT value FROM json_each(?1))", "%s IN (SELECT value FROM json_each(?2))", "?3")
	allCertificates    = storekit.FindCertificates(historyColumns, "%s IN (SELECT value FROM json_each(?1))", "%s IN (SELECT value FROM json_each(?2))", "")
)

// FindCertificates finds certificates by serial number or thumbprint.
func (s *Store) FindCertificates(ctx context.Context, q certorder.CertificateQuery) ([]certorder.CertificateMatch, error) {
	query, args := allCertificates, []any{stringsJSON(q.Serials), stringsJSON(q.Thumbprints)}
	if q.MemberID != 0 {
		query, args = memberCertificates, append(args, q.MemberID)
	}
	rows, err := s.read.QueryContext(ctx, query, args...)
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
