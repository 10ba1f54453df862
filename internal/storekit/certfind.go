package storekit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/certorder/certorder"
)

// HistoryColumns are the columns of a certificate history entry, in the
// order ScanEntry reads them.
const HistoryColumns = `order_id, seq, cert_id, serial_number, thumbprint, common_name, dns_names, status,
	date_issued, valid_from, valid_till`

// ScanEntry scans HistoryColumns into e (the DNS names are JSON text),
// then the columns after them into more.
func ScanEntry(row Row, e *certorder.CertificateEntry, more ...any) error {
	var names string
	if err := row.Scan(append([]any{&e.OrderID, &e.Seq, &e.ID, &e.SerialNumber, &e.Thumbprint, &e.CommonName, &names,
		&e.Status, &e.DateIssued, &e.ValidFrom, &e.ValidTill}, more...)...); err != nil {
		return err
	}
	e.DNSNames = nil
	return json.Unmarshal([]byte(names), &e.DNSNames)
}

// certificatesQuery is the query of FindCertificates: the certificates
// whose serial or thumbprint look-up form is one of a list (in, the
// store's condition of a list argument with %s for the column), of the
// member the first argument of each list names (ofMember), or of every
// member (the operator's); the replaced ones from the history's entries,
// then the current ones from the orders' documents, in one statement so
// that a write between two reads cannot hide a certificate that moved
// from one to the other. It selects HistoryColumns and the order's
// document and format (scanHistory), then the order's member ID and name,
// its status, and whether the certificate is current:
// no certificate with a serial number was recorded on the order after it
// (a reissue still pending, with no serial, leaves the one it replaces
// current; an order's own is current); FindCertificates sorts them
// (sortHistory). Each key goes through its partial
// index by key and member (hence the terms that the key is not empty): a
// member's look-up seeks both, so that another member's certificates are
// not visited, and one another member holds costs the look-up a missing
// one costs (issue 46); the operator's seeks the key alone.
func certificatesQuery(in string, ofMember bool) string {
	member := ""
	if ofMember {
		member = "member_id = ? AND "
	}
	keys := func(table, id string) string {
		return `SELECT ` + id + ` FROM ` + table + ` WHERE ` + member + fmt.Sprintf(in, "serial_key") + ` AND serial_key <> ''
		UNION
		SELECT ` + id + ` FROM ` + table + ` WHERE ` + member + fmt.Sprintf(in, "thumbprint_key") + ` AND thumbprint_key <> ''`
	}
	return `SELECT ` + HistoryColumns + `, NULL, 0, member_id, member, order_status, current FROM (
	SELECT c.*, m.name AS member, o.status AS order_status,
		o.serial_key = '' AND NOT EXISTS (SELECT 1 FROM order_certificates l WHERE l.order_id = c.order_id AND l.seq > c.seq
			AND l.serial_number <> '') AS current
	FROM order_certificates c JOIN orders o ON o.id = c.order_id JOIN members m ON m.id = o.member_id
	WHERE c.seq IN (` + keys("order_certificates", "seq") + `)) f
UNION ALL
SELECT ` + currentColumns + `, o.doc, o.doc_format, o.member_id, m.name, o.status, TRUE
	FROM orders o JOIN members m ON m.id = o.member_id
	WHERE o.id IN (` + keys("orders", "id") + `)`
}

// FindCertificates finds certificates by serial number or thumbprint (the
// API's read: once more where the store reads again, ReadAgain), by order,
// each order's oldest first.
func (k *Kit) FindCertificates(ctx context.Context, q certorder.CertificateQuery) ([]certorder.CertificateMatch, error) {
	k.certQueries.Do(func() {
		in := k.InList("%s")
		k.memberCerts, k.allCerts = certificatesQuery(in, true), certificatesQuery(in, false)
	})
	query, args := k.allCerts, []any{k.List(q.Serials), k.List(q.Thumbprints)}
	if q.MemberID != 0 {
		query, args = k.memberCerts, []any{q.MemberID, args[0], q.MemberID, args[1]}
	}
	var out []certorder.CertificateMatch
	err := k.readAgain(ctx, func() (err error) {
		out, err = Query(ctx, k.Read, func(row Row) (certorder.CertificateMatch, error) {
			var m certorder.CertificateMatch
			return m, scanHistory(row, &m.CertificateEntry, nil, &m.MemberID, &m.Member, &m.OrderStatus, &m.Current)
		}, query, append(args, args...)...)
		return err
	})
	sortHistory(out, func(m certorder.CertificateMatch) certorder.CertificateEntry { return m.CertificateEntry })
	return out, k.Wrap("find certificates", err)
}

// AddedOrders are the orders of the history entries to add (Seq 0), each
// once (an order's entries come together): the orders whose members a
// store reads to write the entries with.
func AddedOrders(entries []certorder.CertificateEntry) []int64 {
	var ids []int64
	for _, e := range entries {
		if e.Seq == 0 && (len(ids) == 0 || ids[len(ids)-1] != e.OrderID) {
			ids = append(ids, e.OrderID)
		}
	}
	return ids
}

// CheckMembers checks that members (an order's member by its ID) has each
// of the orders ids: a history is written after its order.
func CheckMembers(ids []int64, members map[int64]int64) error {
	for _, id := range ids {
		if _, ok := members[id]; !ok {
			return fmt.Errorf("the history of order %d, which is not stored", id)
		}
	}
	return nil
}
