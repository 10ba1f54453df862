package storekit

import "fmt"

// FindCertificates is the query of certorder.CertificateFinder, the same SQL
// in both stores but for each one's form of a set of keys: serialIn and
// thumbprintIn are "the column is one of the first (second) argument"
// with %s for the column, and member is the third argument (the member, 0
// for every member). It selects historyColumns (the entry), then the
// order's member ID and name, its status, and whether the certificate is
// current: no certificate with a serial number was recorded on the order
// after it. Each key goes through its partial index (hence the terms that
// the key is not empty); the member is a join condition, so that another
// member's certificate costs the look-up an unknown one costs.
func FindCertificates(historyColumns, serialIn, thumbprintIn, member string) string {
	return `SELECT ` + historyColumns + `, member_id, member, order_status, current FROM (
	SELECT c.*, o.member_id, m.name AS member, o.status AS order_status,
		NOT EXISTS (SELECT 1 FROM order_certificates l WHERE l.order_id = c.order_id AND l.seq > c.seq
			AND l.serial_number <> '') AS current
	FROM order_certificates c JOIN orders o ON o.id = c.order_id JOIN members m ON m.id = o.member_id
	WHERE c.seq IN (
		SELECT seq FROM order_certificates WHERE ` + fmt.Sprintf(serialIn, "serial_key") + ` AND serial_key <> ''
		UNION
		SELECT seq FROM order_certificates WHERE ` + fmt.Sprintf(thumbprintIn, "thumbprint_key") + ` AND thumbprint_key <> '')
	AND (` + member + ` = 0 OR o.member_id = ` + member + `)) f
ORDER BY order_id, seq`
}
