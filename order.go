package certorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/certorder/certorder/internal/jsonscan"
)

// Order is one certificate order as stored.
//
// Doc is the document as the CA returned it and the operator imported it,
// compacted, every value byte for byte as imported (so numbers sent as strings
// stay strings), minus the fields derived at answer time: is_renewed,
// was_renewed_by_order_id and certificate.days_remaining. CertEnd is the
// offset in Doc of the certificate object's closing brace, where
// wire.AppendOrderInfo splices days_remaining in, so that an answer is one
// read and one write of the document. Its meaning is tied to the compaction
// ParseOrder does: DocFormat says which, so a future change to either can
// migrate stored rows.
type Order struct {
	ID         int64
	MemberID   int64
	Member     string   // member name
	CommonName string   // certificate.common_name
	DNSNames   []string // certificate.dns_names; filled in by ParseOrder only
	Status     string   // order status, an open set of strings
	ValidTill  string   // certificate.valid_till, YYYY-MM-DD; "" while the order is not issued
	RenewedBy  int64    // the order that renewed this one; 0 if none
	Renews     int64    // filled in by ListOrders only: the lowest-numbered order this one renewed; 0 if none
	Doc        []byte
	CertEnd    int
}

// DocFormat is the version of the stored document's layout (see Order).
// Stores record it with each row and refuse to read a row of another.
const DocFormat = 1

// MaxOrderBytes bounds one order document at import. A real order is a
// few KiB (its CSR is the largest part); a larger one is refused, so that
// no request can make the service read and send megabytes.
const MaxOrderBytes = 256 << 10

// DateLayout is the layout of the spec's YYYY-MM-DD dates.
const DateLayout = "2006-01-02"

// DaysRemaining is the number of days from now's date (UTC) to validTill,
// negative once it has passed. validTill is checked on import; should it not
// parse, 0 is returned. It runs on every OrderInfo answer, so the usual
// date is read without time.Parse. It is exact for every date the format
// allows, 0000-01-01 to 9999-12-31: days are counted on the civil
// calendar, never through a time.Duration, whose range (±106751 days) it
// was once clamped to.
func DaysRemaining(validTill string, now time.Time) int {
	y, m, d := now.UTC().Date()
	if ty, tm, td, ok := plainDate(validTill); ok {
		return civilDays(ty, tm, td) - civilDays(y, int(m), d)
	}
	till, err := time.Parse(DateLayout, validTill)
	if err != nil {
		return 0
	}
	ty, tm, td := till.Date()
	return civilDays(ty, int(tm), td) - civilDays(y, int(m), d)
}

// plainDate reads YYYY-MM-DD, a real date; false for anything else.
func plainDate(s string) (y, m, d int, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	num := func(t string) (int, bool) {
		n := 0
		for i := 0; i < len(t); i++ {
			if t[i] < '0' || t[i] > '9' {
				return 0, false
			}
			n = n*10 + int(t[i]-'0')
		}
		return n, true
	}
	y, ok1 := num(s[:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(m, y) {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// civilDays is the number of days from 1970-01-01 to the date
// (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
func civilDays(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// SearchText is what an order search matches: the common name and DNS
// names, lower case, one a line. Stores keep it beside the order.
func (o *Order) SearchText() string {
	return strings.ToLower(strings.Join(append([]string{o.CommonName}, o.DNSNames...), "\n"))
}

// ParsePositive parses text made only of ASCII digits into an int64 > 0.
func ParsePositive(text []byte) (int64, bool) {
	if len(text) == 0 || len(text) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, n > 0
}

// Fields derived at answer time; an imported document's values for them are
// read (the renewal) or dropped.
const (
	fieldIsRenewed     = "is_renewed"
	fieldRenewedBy     = "was_renewed_by_order_id"
	fieldDaysRemaining = "days_remaining"
)

type field struct {
	key   string
	value json.RawMessage
}

// readObject splits a JSON object into its members, in order. Duplicate
// member names are refused: which one would count is anybody's guess.
// checked says data already passed json.Valid (a member of a checked object).
func readObject(data []byte, checked bool) ([]field, error) {
	data = bytes.Trim(data, " \t\r\n")
	if !checked && !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v) // for a message that says where
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if len(data) == 0 || data[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var fields []field
	var dup error
	jsonscan.EachMember(data, func(key, value []byte) {
		for _, f := range fields {
			if f.key == string(key) && dup == nil {
				dup = fmt.Errorf("field %q appears twice", key)
			}
		}
		fields = append(fields, field{string(key), value})
	})
	return fields, dup
}

// ParseOrder checks one order document in the OrderInfo answer's shape and
// makes the Order to store. It needs a positive integer OrderId and a
// certificate object, with valid_till as YYYY-MM-DD unless the status says
// the certificate is not issued yet (CertificateIssued); every field the spec
// types must have its type, in the variations the spec allows (see
// schema.go); fields the spec does not know are kept whatever they hold.
// Every value is kept as it is, so that it comes back as the CA wrote it.
func ParseOrder(data []byte) (*Order, error) {
	if len(data) > MaxOrderBytes {
		return nil, fmt.Errorf("the document is %d bytes, over the limit of %d", len(data), MaxOrderBytes)
	}
	top, err := readObject(data, false)
	if err != nil {
		return nil, err
	}
	o := &Order{}
	for _, f := range top {
		if f.key == "OrderId" {
			id, ok := ParsePositive(f.value)
			if !ok {
				return nil, errors.New("OrderId must be a positive integer")
			}
			o.ID = id
		}
	}
	if o.ID == 0 {
		return nil, errors.New("OrderId is missing")
	}
	if err := o.build(top); err != nil {
		return nil, fmt.Errorf("OrderId %d: %w", o.ID, err)
	}
	return o, nil
}

// build checks the document's fields and writes Doc.
func (o *Order) build(top []field) error {
	var doc bytes.Buffer
	doc.WriteByte('{')
	isRenewed := false
	for _, f := range top {
		if err := sameCase("", f.key, orderSchema, "OrderId", fieldIsRenewed, fieldRenewedBy); err != nil {
			return err
		}
		switch f.key {
		case fieldIsRenewed:
			if err := json.Unmarshal(f.value, &isRenewed); err != nil {
				return errors.New("is_renewed must be true or false")
			}
			continue
		case fieldRenewedBy:
			if string(f.value) == "null" || string(f.value) == "0" {
				continue
			}
			id, ok := ParsePositive(f.value)
			if !ok {
				return errors.New("was_renewed_by_order_id must be a positive integer")
			}
			o.RenewedBy = id
			continue
		case "status":
			var ok bool
			if o.Status, ok = text(f.value); !ok && json.Unmarshal(f.value, &o.Status) != nil {
				return errors.New("status must be a string")
			}
		}
		if rule, ok := orderSchema[f.key]; ok {
			if err := rule.check(f.key, f.value); err != nil {
				return err
			}
		}
		if doc.Len() > 1 {
			doc.WriteByte(',')
		}
		writeKey(&doc, f.key)
		if f.key == "certificate" {
			if err := o.writeCertificate(&doc, f.value); err != nil {
				return err
			}
			continue
		}
		if err := compact(&doc, f.value); err != nil {
			return err
		}
	}
	doc.WriteByte('}')
	switch {
	case o.CertEnd == 0:
		return errors.New("certificate object is missing")
	case o.ValidTill == "" && o.Status == "":
		// A certificate's dates are never invented: an order without them
		// must say it is not issued (pending and its kin).
		return errors.New("certificate.valid_till is missing, and no status says the order is not issued yet")
	case o.ValidTill == "" && CertificateIssued(o.Status):
		return fmt.Errorf("certificate.valid_till is missing, but status %q says the certificate was issued", o.Status)
	case isRenewed != (o.RenewedBy != 0):
		return errors.New("is_renewed and was_renewed_by_order_id disagree")
	case o.RenewedBy == o.ID:
		return errors.New("an order cannot renew itself")
	}
	o.Doc = doc.Bytes()
	return nil
}

func (o *Order) writeCertificate(doc *bytes.Buffer, value json.RawMessage) error {
	fields, err := readObject(value, true)
	if err != nil {
		return fmt.Errorf("certificate: %w", err)
	}
	doc.WriteByte('{')
	n := 0
	for _, f := range fields {
		if err := sameCase("certificate.", f.key, certificateSchema, fieldDaysRemaining); err != nil {
			return err
		}
		switch f.key {
		case fieldDaysRemaining:
			continue
		case "valid_till":
			o.ValidTill, _ = text(f.value) // checked by the schema below
		case "common_name":
			o.CommonName, _ = text(f.value)
		case "dns_names":
			o.DNSNames, _ = names(f.value)
		}
		if rule, ok := certificateSchema[f.key]; ok {
			if err := rule.check("certificate."+f.key, f.value); err != nil {
				return err
			}
		}
		if n > 0 {
			doc.WriteByte(',')
		}
		n++
		writeKey(doc, f.key)
		if err := compact(doc, f.value); err != nil {
			return err
		}
	}
	o.CertEnd = doc.Len()
	doc.WriteByte('}')
	return nil
}

func writeKey(doc *bytes.Buffer, key string) {
	if safeASCII(key) {
		doc.WriteByte('"')
		doc.WriteString(key)
		doc.WriteString(`":`)
		return
	}
	k, _ := json.Marshal(key) // a string always marshals
	doc.Write(k)
	doc.WriteByte(':')
}

// safeASCII reports whether json.Marshal writes s as it is, quoted:
// printable ASCII but for the characters it escapes.
func safeASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// compact writes a valid JSON value without the whitespace between its
// tokens, as json.Compact does (which escapes nothing); it only copies, so
// an import does not scan every value a third time.
func compact(doc *bytes.Buffer, v []byte) error {
	inString, escaped := false, false
	start := 0
	for i, c := range v {
		switch {
		case escaped:
			escaped = false
		case inString:
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			doc.Write(v[start:i])
			start = i + 1
		}
	}
	doc.Write(v[start:])
	return nil
}
