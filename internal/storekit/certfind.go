package storekit

import (
	"fmt"

	"github.com/certorder/certorder"
)

// FindCertificates is the query of CertificateFinder, the same SQL
// in both stores but for each one's form of a set of keys: serialIn and
// thumbprintIn are "the column is one of the first (second) argument"
// with %s for the column, and member is the third argument, the member
// whose certificates are asked for, or "" for every member's (the
// operator's). It selects historyColumns (the entry), then the order's
// member ID and name, its status, and whether the certificate is current:
// no certificate with a serial number was recorded on the order after it.
// Each key goes through its partial index (hence the terms that the key is
// not empty): a member's through the index by member and key, so that
// another member's certificates are not visited, and one another member
// holds costs the look-up a missing one costs (issue 46).
func FindCertificates(historyColumns, serialIn, thumbprintIn, member string) string {
	ofMember := ""
	if member != "" {
		ofMember = "member_id = " + member + " AND "
	}
	return `SELECT ` + historyColumns + `, member_id, member, order_status, current FROM (
	SELECT c.*, m.name AS member, o.status AS order_status,
		NOT EXISTS (SELECT 1 FROM order_certificates l WHERE l.order_id = c.order_id AND l.seq > c.seq
			AND l.serial_number <> '') AS current
	FROM order_certificates c JOIN orders o ON o.id = c.order_id JOIN members m ON m.id = o.member_id
	WHERE c.seq IN (
		SELECT seq FROM order_certificates WHERE ` + ofMember + fmt.Sprintf(serialIn, "serial_key") + ` AND serial_key <> ''
		UNION
		SELECT seq FROM order_certificates WHERE ` + ofMember + fmt.Sprintf(thumbprintIn, "thumbprint_key") + ` AND thumbprint_key <> '')) f
ORDER BY order_id, seq`
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
