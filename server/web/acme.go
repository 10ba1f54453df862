package web

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
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
	u, err := url.Parse(ACMEURL(t, 1))
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", t, err)
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%q is not an https URL", t)
	}
	if u.Scheme == "http" {
		h := u.Hostname()
		if ip := net.ParseIP(h); !strings.EqualFold(h, "localhost") && (ip == nil || !ip.IsLoopback()) {
			return errors.New("an ACME directory URL must be https (plain http only on loopback)")
		}
	}
	return nil
}

// ACMEURL is the template with the order number in place of {orderId}.
func ACMEURL(template string, orderID int64) string {
	return strings.ReplaceAll(template, acmeOrderPlaceholder, strconv.FormatInt(orderID, 10))
}
