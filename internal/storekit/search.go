package storekit

import (
	"fmt"
	"strings"

	"github.com/certorder/certorder"
)

// OrderSearch is the condition of an certorder.OrderQuery's Search and HideRenewed on
// orders (alias o), "" for none: a part of a common name or DNS name (the
// names column, through contains, the store's substring test as a format of
// its one argument), or the order number, serial number or thumbprint the
// search names (certorder.OrderQuery.SearchKeys), which HideRenewed never
// hides: the member asked for that order. arg adds an argument and returns
// its placeholder. A serial or thumbprint is looked up through its partial
// index (hence the terms that the key is not empty), in every certificate
// the order has had.
func OrderSearch(q certorder.OrderQuery, contains string, arg func(any) string) string {
	if q.Search == "" {
		if q.HideRenewed {
			return HideRenewed
		}
		return ""
	}
	match := fmt.Sprintf(contains, arg(strings.ToLower(q.Search)))
	if q.HideRenewed {
		match = "(" + match + " AND " + HideRenewed + ")"
	}
	alts := []string{match}
	id, serial, thumbprint := q.SearchKeys()
	if id != 0 {
		alts = append(alts, "o.id = "+arg(id))
	}
	if serial != "" || thumbprint != "" {
		alts = append(alts, `(o.serial_key = `+arg(serial)+` AND o.serial_key <> '')`,
			`(o.thumbprint_key = `+arg(thumbprint)+` AND o.thumbprint_key <> '')`,
			`o.id IN (SELECT order_id FROM order_certificates WHERE serial_key = `+arg(serial)+
				` AND serial_key <> '' UNION SELECT order_id FROM order_certificates WHERE thumbprint_key = `+arg(thumbprint)+
				` AND thumbprint_key <> '')`)
	}
	return "(" + strings.Join(alts, " OR ") + ")"
}
