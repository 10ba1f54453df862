package web

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/certorder/certorder/internal/acmeurl"
)

// acmeOrderPlaceholder is where the order number goes in an ACME URL template.
const acmeOrderPlaceholder = "{orderId}"

// CheckACMEURLTemplate says whether t will do as serve's
// --acme-url-template: an https URL (http only on loopback) with
// {orderId} in it, in its path, query or fragment only. The rule is the
// template's own, whatever the order: with {orderId} in the host,
// http://[::{orderId}]/ was loopback for order 1 and plain http to
// [::1002] for order 1002.
func CheckACMEURLTemplate(t string) error {
	if !strings.Contains(t, acmeOrderPlaceholder) {
		return fmt.Errorf("%q has no %s: write where the order number goes, e.g. ...directory?action=renew&orderId={orderId}", t, acmeOrderPlaceholder)
	}
	// Two orders that differ in every digit: where the URL points must
	// not change between them.
	one, other := ACMEURL(t, 1), ACMEURL(t, 2)
	u1, err1 := url.Parse(one)
	u2, err2 := url.Parse(other)
	if err1 == nil && err2 == nil && (u1.Scheme != u2.Scheme || u1.User.String() != u2.User.String() || u1.Host != u2.Host) {
		return fmt.Errorf("%q has %s in its scheme, user or host: it may stand only in the path, the query or the fragment", t, acmeOrderPlaceholder)
	}
	if err := acmeurl.Check(one); err != nil {
		return err
	}
	return acmeurl.Check(other)
}

// ACMEURL is the template with the order number in place of {orderId}.
func ACMEURL(template string, orderID int64) string {
	return strings.ReplaceAll(template, acmeOrderPlaceholder, strconv.FormatInt(orderID, 10))
}
