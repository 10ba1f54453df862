package certorder

import (
	"strings"
	"unicode"
)

// Order statuses are an open set of strings, stored as CertCentral writes
// them (its Glossary lists pending, needs_approval, processing,
// waiting_pickup, reissue_pending, issued, rejected, canceled, revoked,
// expired). Two questions about them matter to the rules here, and both
// are asked of the status as a person reads it (NormalStatus: without
// regard to case, to white space at either end or to invisible
// characters; and with "cancelled" for "canceled"): an import written by
// hand as "Canceled" or " issued" must not send automation to an order
// that will never be issued, nor store an issued order without its
// certificate's dates.

// Statuses named by the rules.
const (
	StatusIssued   = "issued"
	StatusRevoked  = "revoked"
	StatusExpired  = "expired"
	StatusCanceled = "canceled"
	StatusRejected = "rejected"
)

// CertificateIssued reports whether an order of this status has had its
// certificate issued, so that its document must carry
// certificate.valid_till: issued, revoked and expired. Every other status,
// including one not known yet, is an order whose certificate may not exist
// (pending and its kin): its certificate dates are stored only if
// CertCentral gave them, never invented.
func CertificateIssued(status string) bool {
	switch NormalStatus(status) {
	case StatusIssued, StatusRevoked, StatusExpired:
		return true
	}
	return false
}

// OrderEnded reports whether an order of this status will never have a
// certificate (canceled or rejected): a renewal chain that ends in one
// must not be used by automation.
func OrderEnded(status string) bool {
	switch NormalStatus(status) {
	case StatusCanceled, "cancelled", StatusRejected:
		return true
	}
	return false
}

// NormalStatus is a status as the rules read it: in lower case, without
// white space at either end, and without the characters a person reading
// it would not see (a zero-width space, a byte order mark, a control
// character). It is only compared; the status is stored as written.
func NormalStatus(status string) string {
	visible := strings.Map(func(r rune) rune {
		if unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return r
		}
		return -1
	}, status)
	return strings.ToLower(strings.TrimSpace(visible))
}
