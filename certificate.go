package certorder

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// An order is a plan of one to three years that holds several
// certificates: a public TLS certificate lives at most 199 days since
// February 2026 (CA/Browser Forum ballot SC-081), so the member's ACME
// client reissues on the same order number; only the plan's end is a
// renewal (a new order number). The history of an order is every
// certificate it has had, recorded by the rule of PlanCertificates.

// Certificate is one certificate of an order, as CertCentral gave it.
type Certificate struct {
	ID           int64    `json:"id,omitempty"`
	SerialNumber string   `json:"serial_number,omitempty"`
	Thumbprint   string   `json:"thumbprint,omitempty"`
	CommonName   string   `json:"common_name,omitempty"`
	DNSNames     []string `json:"dns_names,omitempty"`
	Status       string   `json:"status,omitempty"`
	DateIssued   string   `json:"date_issued,omitempty"`
	ValidFrom    string   `json:"valid_from,omitempty"` // YYYY-MM-DD
	ValidTill    string   `json:"valid_till,omitempty"` // YYYY-MM-DD; "" until issued
}

// Identified reports whether the certificate has an identity to record: a
// certificate ID or a serial number (an order placed but not yet given a
// certificate has neither).
func (c Certificate) Identified() bool { return c.ID != 0 || c.SerialNumber != "" }

// same reports whether c and d are one certificate: the same certificate
// ID, the serial number filled in once it was issued (a certificate pending
// issue has none yet); or, without IDs, the same serial number.
func (c Certificate) same(d Certificate) bool {
	if c.ID != 0 || d.ID != 0 {
		return c.ID == d.ID && (c.SerialNumber == "" || d.SerialNumber == "" || sameSerial(c.SerialNumber, d.SerialNumber))
	}
	return c.SerialNumber != "" && sameSerial(c.SerialNumber, d.SerialNumber)
}

// Keys are the look-up forms of the certificate's serial number and
// thumbprint (SerialKey, HexKey) that a store keeps for it: none for a
// certificate without an identity, which has no place in a history.
func (c Certificate) Keys() (serial, thumbprint string) {
	if !c.Identified() {
		return "", ""
	}
	return SerialKey(c.SerialNumber), HexKey(c.Thumbprint)
}

// SerialKey is how a serial number is looked up: hexadecimal in lower case,
// without colons, spaces or leading zeros (a serial is a number: Go's
// x509 and openssl print it without them, CertCentral with them).
func SerialKey(s string) string { return strings.TrimLeft(HexKey(s), "0") }

// HexKey is how a thumbprint is looked up: lower case, without colons and
// spaces. A string already so is returned as it is, without allocating:
// built with a strings.Replacer per call, the two keys were 8% of an
// import's CPU (docs/PERFORMANCE.md, issue 44).
func HexKey(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ':' || c == ' ' || 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder // ASCII lowered as it is copied: one allocation
	b.Grow(len(s))
	unicode := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ':' && c != ' ' {
			b.WriteByte(lowerASCII(c))
			unicode = unicode || c >= utf8.RuneSelf
		}
	}
	if unicode {
		return strings.ToLower(b.String()) // the rest by Unicode's rules
	}
	return b.String()
}

// sameSerial reports whether a and b are one serial number, SerialKey(a) ==
// SerialKey(b), without making either key: histories are compared entry by
// entry on every import, sync and restore.
func sameSerial(a, b string) bool {
	i, j := skipSerialPrefix(a), skipSerialPrefix(b)
	for {
		i, j = skipSeparators(a, i), skipSeparators(b, j)
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		x, y := a[i], b[j]
		if x >= utf8.RuneSelf || y >= utf8.RuneSelf {
			return SerialKey(a) == SerialKey(b) // strings.ToLower's Unicode rules
		}
		if lowerASCII(x) != lowerASCII(y) {
			return false
		}
		i, j = i+1, j+1
	}
}

// skipSerialPrefix is the index of s's first digit after its leading zeros
// (and the separators among them).
func skipSerialPrefix(s string) int {
	i := 0
	for i < len(s) && (s[i] == '0' || s[i] == ':' || s[i] == ' ') {
		i++
	}
	return i
}

func skipSeparators(s string, i int) int {
	for i < len(s) && (s[i] == ':' || s[i] == ' ') {
		i++
	}
	return i
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// CertificateEntry is one certificate of an order's history as a store
// keeps it: Seq orders the history (0 for an entry not stored yet;
// CurrentSeq for the order's current certificate).
type CertificateEntry struct {
	OrderID int64
	Seq     int64
	Certificate
}

// CurrentSeq is the Seq of an order's current certificate in its history:
// the last entry, after every replaced one. A store keeps the current
// certificate in the order's document, its look-up keys on the order's
// row, and only the replaced certificates as entries of their own (a new
// order writes none; issue 44, docs/PERFORMANCE.md).
const CurrentSeq int64 = math.MaxInt64

// MaxCertificates bounds an order's history: the newest are kept. A
// three-year plan of 47-day certificates has 24; an upstream that
// reissued without end (a fault, or hostile) cannot grow it without bound.
const MaxCertificates = 100

// recordCertificate says which entry of history cur is: at is the index
// of the entry it is (recorded already, perhaps with other details such as
// its serial number once issued), len(history) when it is new, -1 when it
// has no identity. previous is set when cur is newly issued (a serial
// number the order has not had) and the order had an issued certificate
// before: a reissue.
func recordCertificate(history []CertificateEntry, cur Certificate) (at int, previous *Certificate) {
	if !cur.Identified() {
		return -1, nil
	}
	at = len(history)
	newSerial := cur.SerialNumber != ""
	for i, h := range history {
		if cur.SerialNumber != "" && sameSerial(h.SerialNumber, cur.SerialNumber) {
			newSerial = false
		}
		if h.same(cur) {
			at = i
		}
	}
	if newSerial {
		for i := len(history) - 1; i >= 0; i-- {
			if h := history[i]; h.SerialNumber != "" {
				previous = &history[i].Certificate
				break
			}
		}
	}
	return at, previous
}

// CertificatePlan is what recording orders' current certificates writes
// (PlanCertificates) to the replaced certificates a store keeps.
type CertificatePlan struct {
	Entries  []CertificateEntry      // to add (Seq 0): certificates the orders' documents no longer hold
	Removed  []int64                 // the Seqs of entries to delete: past MaxCertificates, or current again
	Reissues map[int64]*ReissuedData // by order
}

// PlanCertificates is storekit.RecordCertificates' rule without the store:
// what recording the current certificate of each of orders (no order twice)
// writes, given histories, the histories stored of those of orders that
// have one (an order absent from it has none), each ending in the
// order's current certificate as stored (Seq CurrentSeq), when it has one.
//
// The history is the certificates an order has had, oldest first, its
// current one last. A certificate the order's document no longer holds is
// added as an entry of its own; one brought up to date (its serial number
// once issued) is the document's alone; one that is current again leaves
// its place for the end. The entries kept are the newest
// MaxCertificates-1, the current certificate the last of MaxCertificates.
func PlanCertificates(histories map[int64][]CertificateEntry, orders []*Order) CertificatePlan {
	var p CertificatePlan
	for _, o := range orders {
		history := histories[o.ID]
		at, prev := recordCertificate(history, o.Certificate)
		if prev != nil {
			if p.Reissues == nil {
				p.Reissues = map[int64]*ReissuedData{}
			}
			p.Reissues[o.ID] = newReissuedData(o.ID, o.Certificate, *prev)
		}
		stored := history
		var current *CertificateEntry
		if n := len(history); n > 0 && history[n-1].Seq == CurrentSeq {
			stored, current = history[:n-1], &history[n-1]
		}
		if current != nil && at == len(stored) {
			continue // the current certificate still, perhaps brought up to date: the document's
		}
		kept := len(stored)
		if 0 <= at && at < len(stored) { // current again
			p.Removed = append(p.Removed, stored[at].Seq)
			kept--
		}
		if current != nil {
			p.Entries = append(p.Entries, CertificateEntry{OrderID: o.ID, Certificate: current.Certificate})
			kept++
		}
		for i := 0; kept > MaxCertificates-1 && i < len(stored); i++ {
			if i != at {
				p.Removed = append(p.Removed, stored[i].Seq)
				kept--
			}
		}
	}
	return p
}

// RestoredHistory is the certificate history a restore writes for o: the
// certificates the export gave, oldest first, then o's current
// certificate, each recorded by the rule of PlanCertificates (so that a
// history exported by an earlier version, or none, ends in the current
// certificate like every other). The bound is kept while recording, as
// PlanCertificates keeps it: a history never holds more than
// MaxCertificates entries to compare with, so a restore is linear in the
// certificates exported (a certificate that has left the history is
// recorded anew, as the import would record it). When o's certificate has
// an identity it is the last entry, which the store keeps in o's document.
func RestoredHistory(o *Order, exported []Certificate) []Certificate {
	var history []CertificateEntry
	for _, c := range append(slices.Clone(exported), o.Certificate) {
		switch at, _ := recordCertificate(history, c); {
		case at == len(history):
			if len(history) == MaxCertificates {
				history = history[1:] // append copies the rest once per MaxCertificates
			}
			history = append(history, CertificateEntry{OrderID: o.ID, Certificate: c})
		case at >= 0: // brought up to date, and current again: last
			history = append(slices.Delete(history, at, at+1), CertificateEntry{OrderID: o.ID, Certificate: c})
		}
	}
	out := make([]Certificate, len(history))
	for i, h := range history {
		out[i] = h.Certificate
	}
	return out
}

// ReissuedData is the data of order.reissued: order OrderID has a new
// certificate, which replaced PreviousCertificate.
type ReissuedData struct {
	OrderID             int64        `json:"order_id"`
	Certificate         IssuedCert   `json:"certificate"`
	PreviousCertificate PreviousCert `json:"previous_certificate"`
}

// IssuedCert is the new certificate of order.reissued.
type IssuedCert struct {
	ID           int64  `json:"id"`
	SerialNumber string `json:"serial_number"`
	Thumbprint   string `json:"thumbprint"`
	ValidFrom    string `json:"valid_from"`
	ValidTill    string `json:"valid_till"`
}

// PreviousCert is the replaced certificate of order.reissued.
type PreviousCert struct {
	ID           int64  `json:"id"`
	SerialNumber string `json:"serial_number"`
	Thumbprint   string `json:"thumbprint"`
	ValidTill    string `json:"valid_till"`
}

func newReissuedData(orderID int64, cur, prev Certificate) *ReissuedData {
	return &ReissuedData{OrderID: orderID,
		Certificate:         IssuedCert{cur.ID, cur.SerialNumber, cur.Thumbprint, cur.ValidFrom, cur.ValidTill},
		PreviousCertificate: PreviousCert{prev.ID, prev.SerialNumber, prev.Thumbprint, prev.ValidTill}}
}
