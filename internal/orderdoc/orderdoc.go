// Package orderdoc reads an order document, as the OrderInfo answer shapes
// it, into the Order to store: it checks every field the spec types
// (schema.go) and compacts the document, keeping every value as it was
// sent. The import, the sync, a restore and the stores' sync writes all
// parse with it. It imports the standard library, the root package,
// internal/jsonscan and segmentio's JSON validator.
package orderdoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	segjson "github.com/segmentio/encoding/json"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/jsonscan"
)

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
	known bool // key is one of knownNames
}

// readObject splits a JSON object into its members, in order. Duplicate
// member names are refused: which one would count is anybody's guess.
// checked says data already passed valid (a member of a checked object).
func readObject(data []byte, checked bool) ([]field, error) {
	data = jsonscan.TrimSpace(data)
	if !checked && !valid(data) {
		var v any
		err := json.Unmarshal(data, &v) // for a message that says where
		// %w: importfile finds the *json.SyntaxError, to say where in the file.
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if len(data) == 0 || data[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	// At most one member a comma, and one more: one allocation for most
	// objects (an order's has 16 members, its certificate's 22).
	fields := make([]field, 0, min(bytes.Count(data, []byte{','})+1, 64))
	// A known name is the schema's own string (no allocation) and is
	// checked for a second appearance by its bit; any other name against
	// the other names not known (compared with every member before: 7% of
	// BenchmarkParse's instructions).
	var dup error
	var seen [maxKnown / 64]uint64
	jsonscan.EachMember(data, func(key, value []byte) {
		if k, ok := knownNames[string(key)]; ok {
			word, bit := k.bit/64, uint64(1)<<(k.bit%64)
			if seen[word]&bit != 0 && dup == nil {
				dup = fmt.Errorf("field %q appears twice", key)
			}
			seen[word] |= bit
			fields = append(fields, field{k.name, value, true})
			return
		}
		for _, f := range fields {
			if !f.known && f.key == string(key) && dup == nil {
				dup = fmt.Errorf("field %q appears twice", key)
			}
		}
		fields = append(fields, field{string(key), value, false})
	})
	return fields, dup
}

// valid is segmentio's json.Valid, which accepts what encoding/json's
// does (FuzzValid compares them) in a third of the time: 2.3 µs against
// 7–8 for a loadbench order, a sixth of Parse, whose every caller (an
// import of a million orders parses a million) checks the whole document.
func valid(data []byte) bool { return segjson.Valid(data) }

// knownName is a name of knownNames and its bit in readObject's set of
// the names it has met.
type knownName struct {
	name string
	bit  int
}

// maxKnown is how many names knownNames can hold.
const maxKnown = 128

// knownNames holds every field name the schema or Parse knows, each
// printable ASCII that JSON writes as it is (writeKey).
var knownNames = func() map[string]knownName {
	m := map[string]knownName{}
	add := func(name string) {
		if _, ok := m[name]; !ok {
			m[name] = knownName{name, len(m)}
		}
		if len(m) > maxKnown || !safeASCII(name) {
			panic("orderdoc: over maxKnown names, or a name JSON escapes: " + name)
		}
	}
	var addAll func(rules map[string]rule)
	addAll = func(rules map[string]rule) {
		for name, r := range rules {
			add(name)
			addAll(r.fields)
		}
	}
	addAll(orderSchema)
	addAll(certificateSchema)
	for _, name := range []string{"OrderId", fieldIsRenewed, fieldRenewedBy, fieldDaysRemaining} {
		add(name)
	}
	return m
}()

// Parse checks one order document in the OrderInfo answer's shape and
// makes the Order to store. It needs a positive integer OrderId and a
// certificate object, with valid_till as YYYY-MM-DD unless the status says
// the certificate is not issued yet (CertificateIssued); every field the spec
// types must have its type, in the variations the spec allows (see
// schema.go); fields the spec does not know are kept whatever they hold.
// Every value is kept as it is, so that it comes back as the CA wrote it.
func Parse(data []byte) (*certorder.Order, error) {
	if len(data) > certorder.MaxOrderBytes {
		return nil, fmt.Errorf("the document is %d bytes, over the limit of %d", len(data), certorder.MaxOrderBytes)
	}
	top, err := readObject(data, false)
	if err != nil {
		return nil, err
	}
	o := &certorder.Order{}
	for _, f := range top {
		if f.key == "OrderId" {
			id, ok := jsonscan.ParsePositive(f.value)
			if !ok {
				return nil, errors.New("OrderId must be a positive integer")
			}
			o.ID = id
		}
	}
	if o.ID == 0 {
		return nil, errors.New("OrderId is missing")
	}
	if err := build(o, top, len(data)); err != nil {
		return nil, fmt.Errorf("OrderId %d: %w", o.ID, err)
	}
	return o, nil
}

// StoredCertificate reads the current certificate of a document Parse
// made (certorder.Order.Doc) without checking or compacting it again: a
// history's last entry is read so (storekit.Histories), at a fraction
// of Parse's cost.
func StoredCertificate(doc []byte) (certorder.Certificate, error) {
	var c certorder.Certificate
	top, err := readObject(doc, false)
	if err != nil {
		return c, err
	}
	for _, f := range top {
		if f.key == "certificate" {
			fields, err := readObject(f.value, true)
			if err != nil {
				return c, fmt.Errorf("certificate: %w", err)
			}
			for _, cf := range fields {
				readCertificate(&c, cf)
			}
			return c, nil
		}
	}
	return c, errors.New("certificate object is missing")
}

// build checks the document's fields and writes Doc, which is at most
// size bytes long.
func build(o *certorder.Order, top []field, size int) error {
	var doc bytes.Buffer
	doc.Grow(size)
	doc.WriteByte('{')
	isRenewed := false
	for _, f := range top {
		rule, typed, err := ruleOf("", f.key, orderSchema, "OrderId", fieldIsRenewed, fieldRenewedBy)
		if err != nil {
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
			id, ok := jsonscan.ParsePositive(f.value)
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
		case "order_valid_till":
			o.PlanTill, _ = text(f.value) // checked by the schema below
		}
		if typed {
			if err := rule.check("", f.key, f.value); err != nil {
				return err
			}
		}
		if doc.Len() > 1 {
			doc.WriteByte(',')
		}
		writeKey(&doc, f)
		if f.key == "certificate" {
			if err := writeCertificate(o, &doc, f.value); err != nil {
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
	case o.Certificate.ValidTill == "" && certorder.NormalStatus(o.Status) == "":
		// A certificate's dates are never invented: an order without them
		// must say it is not issued (pending and its kin).
		return errors.New("certificate.valid_till is missing, and no status says the order is not issued yet")
	case o.Certificate.ValidTill == "" && certorder.CertificateIssued(o.Status):
		return fmt.Errorf("certificate.valid_till is missing, but status %q says the certificate was issued", o.Status)
	case isRenewed != (o.RenewedBy != 0):
		return errors.New("is_renewed and was_renewed_by_order_id disagree")
	case o.RenewedBy == o.ID:
		return errors.New("an order cannot renew itself")
	}
	o.Doc = doc.Bytes()
	return nil
}

func writeCertificate(o *certorder.Order, doc *bytes.Buffer, value json.RawMessage) error {
	fields, err := readObject(value, true)
	if err != nil {
		return fmt.Errorf("certificate: %w", err)
	}
	doc.WriteByte('{')
	n := 0
	for _, f := range fields {
		rule, typed, err := ruleOf("certificate.", f.key, certificateSchema, fieldDaysRemaining)
		if err != nil {
			return err
		}
		if f.key == fieldDaysRemaining {
			continue
		}
		if typed {
			if err := rule.check("certificate.", f.key, f.value); err != nil {
				return err
			}
		}
		readCertificate(&o.Certificate, f) // checked above
		if n > 0 {
			doc.WriteByte(',')
		}
		n++
		writeKey(doc, f)
		if err := compact(doc, f.value); err != nil {
			return err
		}
	}
	o.CertEnd = doc.Len()
	doc.WriteByte('}')
	return nil
}

// readCertificate reads a checked member of the certificate object into
// the Certificate it is part of.
func readCertificate(c *certorder.Certificate, f field) {
	switch f.key {
	case "id":
		c.ID, _ = strconv.ParseInt(string(f.value), 10, 64)
	case "serial_number":
		c.SerialNumber, _ = text(f.value)
	case "thumbprint":
		c.Thumbprint, _ = text(f.value)
	case "common_name":
		c.CommonName, _ = text(f.value)
	case "dns_names":
		c.DNSNames, _ = names(f.value)
	case "status":
		c.Status, _ = text(f.value)
	case "date_issued":
		c.DateIssued, _ = text(f.value)
	case "valid_from":
		c.ValidFrom, _ = text(f.value)
	case "valid_till":
		c.ValidTill, _ = text(f.value)
	}
}

func writeKey(doc *bytes.Buffer, f field) {
	if f.known || safeASCII(f.key) {
		doc.WriteByte('"')
		doc.WriteString(f.key)
		doc.WriteString(`":`)
		return
	}
	k, _ := json.Marshal(f.key) // a string always marshals
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
// an import does not scan every value a third time. A value that is not an
// object or an array (EachMember trimmed it) has no such whitespace.
func compact(doc *bytes.Buffer, v []byte) error {
	if len(v) > 0 && v[0] != '{' && v[0] != '[' {
		doc.Write(v)
		return nil
	}
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
