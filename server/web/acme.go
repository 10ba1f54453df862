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
	one := ACMEURL(t, 1)
	if err := acmeurl.Check(one); err != nil {
		return err
	}
	// Where the URL points must not change with the order: compare with
	// an order that differs in every digit.
	u1, _ := url.Parse(one) // Check parsed it
	u2, err := url.Parse(ACMEURL(t, 2))
	if err != nil || u1.Scheme != u2.Scheme || u1.User.String() != u2.User.String() || u1.Host != u2.Host {
		return fmt.Errorf("%q has %s in its scheme, user or host: it may stand only in the path, the query or the fragment", t, acmeOrderPlaceholder)
	}
	return nil
}

// ACMEURL is the template with the order number in place of {orderId}.
func ACMEURL(template string, orderID int64) string {
	return strings.ReplaceAll(template, acmeOrderPlaceholder, strconv.FormatInt(orderID, 10))
}
