package digicert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/printable"
)

// ErrUnmappable: the Order info answer cannot become a spec order. Every
// SpecOrder error matches it, matched with errors.Is.
var ErrUnmappable = errors.New("digicert: the order cannot be mapped to the spec's order object")

// kind is what a spec field accepts from CertCentral. A value of another
// type is an error rather than a guess.
type kind int

const (
	kString      kind = iota
	kBool             // true or false
	kCount            // a non-negative integer, as a number or a string of digits (kept as sent)
	kCountOrNull      // kCount, or null (kept as null)
	kIdent            // a string, or a non-negative integer number (kept as sent)
	kDate             // a string yyyy-MM-dd
	kDateTime         // a string, ISO 8601 date-time with UTC offset
	kStrings          // an array of strings
	kObject           // an object, built from members
)

// field is one member of the spec's order object and where CertCentral's
// Order info answer has it: the first of sources present (dotted paths from
// the top of the answer) is used. A field whose sources are all absent or
// null is omitted, never invented.
type field struct {
	key     string
	sources []string
	kind    kind
	members []field // kObject: the members kept; every other member is dropped
}

// certificateFields and orderFieldsAfterRenewal are the mapping, in the
// spec's order (sections 2.2-2.5); docs/SYNC.md gives it as a table with the
// DigiCert pages it rests on. OrderId, status and the renewal pair are
// written by SpecOrder itself. certificate.days_remaining is left out:
// certorder computes it each day.
var certificateFields = []field{
	{key: "id", sources: []string{"certificate.id"}, kind: kCount},
	{key: "thumbprint", sources: []string{"certificate.thumbprint"}, kind: kString},
	{key: "serial_number", sources: []string{"certificate.serial_number"}, kind: kString},
	{key: "common_name", sources: []string{"certificate.common_name"}, kind: kString},
	{key: "dns_names", sources: []string{"certificate.dns_names"}, kind: kStrings},
	{key: "status", sources: []string{"certificate.status"}, kind: kString},
	{key: "date_created", sources: []string{"certificate.date_created"}, kind: kDateTime},
	{key: "date_issued", sources: []string{"certificate.date_issued"}, kind: kDateTime},
	{key: "valid_from", sources: []string{"certificate.valid_from"}, kind: kDate},
	{key: "valid_till", sources: []string{"certificate.valid_till"}, kind: kDate},
	{key: "cert_validity", sources: []string{"certificate.cert_validity"}, kind: kObject, members: []field{
		{key: "years", sources: []string{"years"}, kind: kCount},
		{key: "days", sources: []string{"days"}, kind: kCount},
		{key: "custom_expiration_date", sources: []string{"custom_expiration_date"}, kind: kDate},
	}},
	{key: "csr", sources: []string{"certificate.csr"}, kind: kString},
	{key: "is_rsassa_pss", sources: []string{"certificate.is_rsassa_pss"}, kind: kBool},
	{key: "signature_hash", sources: []string{"certificate.signature_hash"}, kind: kString},
	{key: "profile_option", sources: []string{"certificate.profile_option"}, kind: kString},
	{key: "key_size", sources: []string{"certificate.key_size"}, kind: kCount},
	{key: "ca_cert", sources: []string{"certificate.ca_cert"}, kind: kObject, members: []field{
		{key: "id", sources: []string{"id"}, kind: kIdent},
		{key: "name", sources: []string{"name"}, kind: kString},
	}},
	// The ordering user's ID; the user's names and e-mail stay behind.
	{key: "user_id", sources: []string{"certificate.user_id", "user_id", "user.id"}, kind: kIdent},
	{key: "receipt_id", sources: []string{"certificate.receipt_id", "receipt_id"}, kind: kCount},
	{key: "purchased_dns_names", sources: []string{"certificate.purchased_dns_names", "purchased_dns_names"}, kind: kCount},
	{key: "purchased_wildcard_names", sources: []string{"certificate.purchased_wildcard_names", "purchased_wildcard_names"}, kind: kCountOrNull},
}

// orderFieldsAfterRenewal are the top-level fields after is_renewed and
// was_renewed_by_order_id.
var orderFieldsAfterRenewal = []field{
	{key: "date_created", sources: []string{"date_created"}, kind: kDateTime},
	{key: "date_issued", sources: []string{"date_issued", "certificate.date_issued"}, kind: kDateTime},
	{key: "validity_years", sources: []string{"validity_years"}, kind: kCount},
	{key: "order_valid_from", sources: []string{"order_valid_from"}, kind: kDate},
	{key: "order_valid_till", sources: []string{"order_valid_till"}, kind: kDate},
	{key: "product", sources: []string{"product"}, kind: kObject, members: []field{
		{key: "name_id", sources: []string{"name_id"}, kind: kString},
		{key: "name", sources: []string{"name"}, kind: kString},
		{key: "type", sources: []string{"type"}, kind: kString},
		{key: "csr_required", sources: []string{"csr_required"}, kind: kBool},
	}},
	{key: "purchased_dns_names", sources: []string{"purchased_dns_names", "certificate.purchased_dns_names"}, kind: kCount},
	{key: "purchased_wildcard_names", sources: []string{"purchased_wildcard_names", "certificate.purchased_wildcard_names"}, kind: kCountOrNull},
	{key: "api_key", sources: []string{"api_key"}, kind: kObject, members: []field{
		{key: "name", sources: []string{"name"}, kind: kString},
		{key: "key_type", sources: []string{"key_type"}, kind: kString},
		{key: "url_mask", sources: []string{"url_mask"}, kind: kString},
	}},
}

// SpecOrder builds the order object of the certorder interface from an
// Order info answer (o.Raw): OrderId from id, status as CertCentral writes
// it, is_renewed and was_renewed_by_order_id from is_renewed and
// renewed_order_id (0 means none), and every other spec field from its
// CertCentral source, values kept as sent. Nothing else reaches the output:
// no contacts, user names, e-mails, phone numbers, notes, organization or
// division names.
//
// Orders of every status map: one not issued yet (pending and its kin, or
// a status not known yet) has no certificate dates, and gets none: a field
// CertCentral does not give is left out, never filled in (order_valid_till
// is the contract's end, not the certificate's). An order whose status says
// its certificate was issued (certorder.CertificateIssued) but lacks
// certificate.valid_till is refused: days_remaining is counted from it.
func SpecOrder(o *Order) ([]byte, error) {
	if o == nil || len(o.Raw) == 0 {
		return nil, fmt.Errorf("%w: no Order info answer", ErrUnmappable)
	}
	top, ok := object(o.Raw)
	if !ok {
		return nil, fmt.Errorf("%w: the Order info answer is not a JSON object", ErrUnmappable)
	}
	id, ok := count(top["id"])
	if !ok || id <= 0 {
		return nil, fmt.Errorf("%w: id is not a positive integer", ErrUnmappable)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: order %d: %s", ErrUnmappable, id, fmt.Sprintf(format, args...))
	}
	if _, ok := object(top["certificate"]); !ok && present(top["certificate"]) {
		return nil, fail("certificate is not an object")
	}
	var status string
	if err := json.Unmarshal(top["status"], &status); err != nil || status == "" {
		return nil, fail("status is missing or not a string")
	}
	// Paths such as certificate.id all read the certificate object: parse
	// each nested object once, not once a field.
	nested := map[string]map[string]json.RawMessage{}
	if raw, _ := lookup(top, []string{"certificate.valid_till"}, nested); !present(raw) && certorder.CertificateIssued(status) {
		return nil, fail("status is %q but certificate.valid_till is missing", status)
	}

	var b bytes.Buffer
	b.WriteString(`{"OrderId":`)
	b.WriteString(strconv.FormatInt(id, 10))

	cert, err := build(top, certificateFields, nested)
	if err != nil {
		return nil, fail("%v", err)
	}
	b.WriteString(`,"certificate":`)
	b.Write(cert)
	b.WriteString(`,"status":`)
	b.Write(compact(top["status"]))

	renewedBy, err := renewal(top, id)
	if err != nil {
		return nil, fail("%v", err)
	}
	if renewedBy != 0 {
		b.WriteString(`,"is_renewed":true,"was_renewed_by_order_id":`)
		b.WriteString(strconv.FormatInt(renewedBy, 10))
	} else {
		b.WriteString(`,"is_renewed":false`)
	}

	rest, err := build(top, orderFieldsAfterRenewal, nested)
	if err != nil {
		return nil, fail("%v", err)
	}
	if len(rest) > 2 { // more than "{}"
		b.WriteByte(',')
		b.Write(rest[1 : len(rest)-1])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// renewal reads the renewal relation: renewed_order_id, 0 or absent for
// none, which must agree with is_renewed.
func renewal(top map[string]json.RawMessage, id int64) (int64, error) {
	var by int64
	if raw := top["renewed_order_id"]; present(raw) {
		n, ok := count(raw)
		if !ok {
			return 0, fmt.Errorf("renewed_order_id %s is not a non-negative integer", shown(raw))
		}
		by = n
	}
	isRenewed := by != 0
	if raw := top["is_renewed"]; present(raw) {
		if err := json.Unmarshal(raw, &isRenewed); err != nil {
			return 0, fmt.Errorf("is_renewed %s is not true or false", shown(raw))
		}
	}
	switch {
	case isRenewed && by == 0:
		return 0, errors.New("is_renewed is true but renewed_order_id names no order")
	case !isRenewed && by != 0:
		return 0, fmt.Errorf("is_renewed is false but renewed_order_id is %d", by)
	case by == id:
		return 0, errors.New("renewed_order_id names the order itself")
	}
	return by, nil
}

// build writes the object of fields, taking each from the first of its
// sources present in from; nested caches from's parsed objects by path
// (nil: no cache).
func build(from map[string]json.RawMessage, fields []field, nested map[string]map[string]json.RawMessage) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for _, f := range fields {
		raw, src := lookup(from, f.sources, nested)
		if raw == nil {
			continue
		}
		value, err := convert(f, raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		if value == nil {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(f.key) // a string always marshals
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var digits = regexp.MustCompile(`^[0-9]+$`)

// convert checks raw against the field's kind and returns the value to
// write, or nil to leave the field out (an object with no member kept).
func convert(f field, raw json.RawMessage) (json.RawMessage, error) {
	raw = compact(raw)
	if string(raw) == "null" {
		if f.kind == kCountOrNull {
			return raw, nil
		}
		return nil, nil // null is as good as absent
	}
	var s string
	isString := json.Unmarshal(raw, &s) == nil && raw[0] == '"'
	switch f.kind {
	case kString:
		if !isString {
			return nil, fmt.Errorf("%s is not a string", shown(raw))
		}
	case kBool:
		if string(raw) != "true" && string(raw) != "false" {
			return nil, fmt.Errorf("%s is not true or false", shown(raw))
		}
	case kCount, kCountOrNull:
		if _, ok := count(raw); !ok {
			return nil, fmt.Errorf("%s is not a non-negative integer", shown(raw))
		}
	case kIdent:
		if !isString && !digits.Match(raw) {
			return nil, fmt.Errorf("%s is neither a string nor a non-negative integer", shown(raw))
		}
	case kDate:
		if _, err := time.Parse(time.DateOnly, s); !isString || err != nil {
			return nil, fmt.Errorf("%s is not a date yyyy-MM-dd", shown(raw))
		}
	case kDateTime:
		if _, err := time.Parse(time.RFC3339, s); !isString || err != nil {
			return nil, fmt.Errorf("%s is not an ISO 8601 date-time with UTC offset", shown(raw))
		}
	case kStrings:
		var list []string
		if raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
			return nil, fmt.Errorf("%s is not an array of strings", shown(raw))
		}
	case kObject:
		obj, ok := object(raw)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", shown(raw))
		}
		built, err := build(obj, f.members, nil)
		if err != nil {
			return nil, err
		}
		if len(built) == 2 {
			return nil, nil
		}
		return built, nil
	}
	return raw, nil
}

// lookup returns the value of the first source present (not absent, not
// null) and its path; when every source is absent or null but one was an
// explicit null, that null.
func lookup(from map[string]json.RawMessage, sources []string, nested map[string]map[string]json.RawMessage) (json.RawMessage, string) {
	var null json.RawMessage
	var nullSrc string
	for _, src := range sources {
		path := strings.Split(src, ".")
		cur := from
		for i, name := range path {
			raw, ok := cur[name]
			if !ok {
				break
			}
			if !present(raw) {
				if i == len(path)-1 && null == nil {
					null, nullSrc = json.RawMessage("null"), src
				}
				break
			}
			if i == len(path)-1 {
				return raw, src
			}
			prefix := strings.Join(path[:i+1], ".")
			next, cached := nested[prefix]
			if !cached {
				if next, ok = object(raw); !ok {
					break
				}
				if nested != nil {
					nested[prefix] = next
				}
			}
			cur = next
		}
	}
	return null, nullSrc
}

// count reads a non-negative integer sent as a number or as a string of
// digits.
func count(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	if !digits.Match(raw) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null"
}

func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return bytes.TrimSpace(raw)
	}
	return b.Bytes()
}

// shown is a value from an Order info answer as an error may quote it:
// by certorder's one rule for shown text (escaped, bounded), since the
// error reaches the sync's log and the operator's terminal.
func shown(raw json.RawMessage) string {
	return printable.String(string(raw))
}
