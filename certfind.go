package certorder

import (
	"strconv"
	"strings"
)

// Finding an order from a certificate: a member's ACME client and servers
// hold certificates, not order numbers, and a CA's revocation notice lists
// serial numbers. The look-up goes through every order's certificate
// history (storekit.RecordCertificates), so that an earlier certificate of a
// reissued order is found too.

// MaxSerialDigits bounds a serial number in hexadecimal digits, leading
// zeros left out: 20 octets (RFC 5280, section 4.1.2.2).
const MaxSerialDigits = 40

// ThumbprintDigits is the length of the SHA-1 thumbprint CertCentral gives,
// in hexadecimal digits.
const ThumbprintDigits = 40

// ParseSerial reads a serial number as members and CAs write it:
// hexadecimal in any case, with or without colons, spaces and leading
// zeros. It returns its look-up form (SerialKey), or false when it is not
// one: empty, zero, not hexadecimal, or over MaxSerialDigits.
func ParseSerial(s string) (string, bool) {
	key := SerialKey(s)
	return key, key != "" && len(key) <= MaxSerialDigits && isHex(key)
}

// ParseThumbprint reads a SHA-1 thumbprint (40 hexadecimal digits, any
// case, colons and spaces ignored) and returns its look-up form (HexKey).
func ParseThumbprint(s string) (string, bool) {
	key := HexKey(s)
	return key, len(key) == ThumbprintDigits && isHex(key)
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}

// CertificateQuery asks for the certificates with any of the serial
// numbers or thumbprints, in their look-up forms (ParseSerial,
// ParseThumbprint).
type CertificateQuery struct {
	MemberID    int64 // only this member's orders; 0: every member's (operators)
	Serials     []string
	Thumbprints []string
}

// CertificateMatch is a certificate found: its history entry, its order's
// member and status, and whether it is the order's current certificate.
type CertificateMatch struct {
	CertificateEntry
	MemberID    int64
	Member      string
	OrderStatus string
	// Current: no certificate with a serial number was recorded on the
	// order after it. A reissue still pending (a new certificate ID without
	// a serial) does not replace it until it is issued.
	Current bool
}

// SearchKeys are the identifiers a search of the orders list may be, beside
// a part of a name: an order number (id, 0 if it is not one), a serial
// number and a SHA-1 thumbprint of one of the order's certificates, in
// their look-up forms ("" when it is not one). A string of digits is both
// an order number and a serial (hexadecimal digits).
func (q OrderQuery) SearchKeys() (id int64, serial, thumbprint string) {
	s := strings.TrimSpace(q.Search)
	if strings.Trim(s, "0123456789") == "" {
		id, _ = strconv.ParseInt(s, 10, 64) // 0 when empty, zero or too large
	}
	if key, ok := ParseSerial(s); ok {
		serial = key
	}
	if key, ok := ParseThumbprint(s); ok {
		thumbprint = key
	}
	return id, serial, thumbprint
}
