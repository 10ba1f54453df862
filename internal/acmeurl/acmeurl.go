// Package acmeurl holds the one rule for ACME directory URLs that members'
// ACME clients are pointed at (certorder acme-url, serve's
// --acme-url-template): https, or plain http on loopback only (a test
// server on this machine), since the client sends its account's requests
// there.
package acmeurl

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Check refuses a URL that is not https, unless its host is loopback.
func Check(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%q is not an https URL", raw)
	}
	if u.Scheme == "http" && !Loopback(u.Hostname()) {
		return fmt.Errorf("%q is not https: plain http is allowed only on loopback (127.0.0.0/8, ::1, localhost)", raw)
	}
	return nil
}

// Loopback reports whether host is localhost or a loopback address.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
