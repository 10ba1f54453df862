package web

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/certorder/certorder/internal/acmeurl"
)

// acmeOrderPlaceholder is where the order number goes in an ACME URL template.
const acmeOrderPlaceholder = "{orderId}"

// CheckACMEURLTemplate says whether t will do as serve's
// --acme-url-template: an https URL (http only on loopback) with
// {orderId} in it.
func CheckACMEURLTemplate(t string) error {
	if !strings.Contains(t, acmeOrderPlaceholder) {
		return fmt.Errorf("%q has no %s: write where the order number goes, e.g. ...directory?action=renew&orderId={orderId}", t, acmeOrderPlaceholder)
	}
	return acmeurl.Check(ACMEURL(t, 1))
}

// ACMEURL is the template with the order number in place of {orderId}.
func ACMEURL(template string, orderID int64) string {
	return strings.ReplaceAll(template, acmeOrderPlaceholder, strconv.FormatInt(orderID, 10))
}
