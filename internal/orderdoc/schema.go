package orderdoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/jsonscan"
	"github.com/certorder/certorder/internal/printable"
)

// The types the spec gives each field of an order (sections 2.2 to 2.5),
// with exactly the variations it allows: numbers as strings of digits where
// it says so, user_id as a number, null counts. The import refuses anything
// else, so that whatever it accepts reads with client.Order (the Go
// client, the web page). Fields the spec does not name are kept unchecked.

// kind is what a field may hold.
type kind int

const (
	kindString         kind = iota // a string without NUL
	kindStringOrNumber             // a string, or a number (user_id)
	kindInt                        // an integer
	kindIntOrDigits                // an integer or a string of digits (receipt_id)
	kindCount                      // an integer, a string of digits, or null (the purchased counts)
	kindIntOrNull                  // an integer or null (the order's purchased counts)
	kindBool                       // true or false
	kindDate                       // "YYYY-MM-DD"
	kindDateTime                   // ISO 8601 date-time with a UTC offset (RFC 3339)
	kindNames                      // an array of strings
	kindObject                     // an object, its members checked by fields
)

// rule is the type of one field.
type rule struct {
	kind   kind
	fields map[string]rule // for kindObject
}

var orderSchema = map[string]rule{
	"status":                   {kind: kindString},
	"date_created":             {kind: kindDateTime},
	"date_issued":              {kind: kindDateTime},
	"validity_years":           {kind: kindInt},
	"order_valid_from":         {kind: kindDate},
	"order_valid_till":         {kind: kindDate},
	"purchased_dns_names":      {kind: kindIntOrNull},
	"purchased_wildcard_names": {kind: kindIntOrNull},
	"certificate":              {kind: kindObject}, // its members: certificateSchema, checked as it is written
	"product": {kind: kindObject, fields: map[string]rule{
		"name_id":      {kind: kindString},
		"name":         {kind: kindString},
		"type":         {kind: kindString},
		"csr_required": {kind: kindBool},
	}},
	"api_key": {kind: kindObject, fields: map[string]rule{
		"name":     {kind: kindString},
		"key_type": {kind: kindString},
		"url_mask": {kind: kindString},
	}},
}

var certificateSchema = map[string]rule{
	"id":            {kind: kindInt},
	"thumbprint":    {kind: kindString},
	"serial_number": {kind: kindString},
	"common_name":   {kind: kindString},
	"dns_names":     {kind: kindNames},
	"status":        {kind: kindString},
	"date_created":  {kind: kindDateTime},
	"date_issued":   {kind: kindDateTime},
	"valid_from":    {kind: kindDate},
	"valid_till":    {kind: kindDate},
	"cert_validity": {kind: kindObject, fields: map[string]rule{
		"years":                  {kind: kindInt},
		"days":                   {kind: kindInt},
		"custom_expiration_date": {kind: kindDate},
	}},
	"csr":            {kind: kindString},
	"is_rsassa_pss":  {kind: kindBool},
	"signature_hash": {kind: kindString},
	"profile_option": {kind: kindString},
	"key_size":       {kind: kindInt},
	"ca_cert": {kind: kindObject, fields: map[string]rule{
		"id":   {kind: kindString},
		"name": {kind: kindString},
	}},
	"user_id":                  {kind: kindStringOrNumber},
	"receipt_id":               {kind: kindIntOrDigits},
	"purchased_dns_names":      {kind: kindCount},
	"purchased_wildcard_names": {kind: kindCount},
}

var kindText = map[kind]string{
	kindString:         "a string",
	kindStringOrNumber: "a string or a number",
	kindInt:            "an integer",
	kindIntOrDigits:    "an integer or a string of digits",
	kindCount:          "an integer, a string of digits or null",
	kindIntOrNull:      "an integer or null",
	kindBool:           "true or false",
	kindDate:           "a date YYYY-MM-DD",
	kindDateTime:       "a date-time with a UTC offset (RFC 3339)",
	kindNames:          "an array of strings",
	kindObject:         "an object",
}

// check reports whether value, of the field key of the object at parent
// ("" for the document, else the path with a dot), holds what r allows.
// The path is put together only for an object's members and for an error:
// it was two strings allocated a field.
func (r rule) check(parent, key string, value json.RawMessage) error {
	if !r.holds(value) {
		return fmt.Errorf("%s%s must be %s, not %s", parent, key, kindText[r.kind], snippet(value))
	}
	if r.kind != kindObject || r.fields == nil {
		return nil
	}
	fields, err := readObject(value, true)
	if err != nil {
		return fmt.Errorf("%s%s: %w", parent, key, err)
	}
	path := parent + key + "."
	for _, f := range fields {
		sub, typed, err := ruleOf(path, f.key, r.fields)
		if err != nil {
			return err
		}
		if typed {
			if err := sub.check(path, f.key, f.value); err != nil {
				return err
			}
		}
	}
	return nil
}

// ruleOf is the rule of the field key among known, the fields of the object
// at path, and whether it has one. It refuses a key that names a field the
// spec types (or one of also) in other letter case: encoding/json, which
// the client and the web page read documents with, matches names without
// regard to case, so "produCt":0 would be read as product without ever
// being checked as one. (One look-up a field: the check and the rule
// looked the key up apart: 4% of BenchmarkParse's instructions.)
func ruleOf(path, key string, known map[string]rule, also ...string) (rule, bool, error) {
	if r, ok := known[key]; ok || !mayFold(key) {
		return r, ok, nil
	}
	for name := range known {
		if strings.EqualFold(key, name) {
			return rule{}, false, fmt.Errorf("field %s%s: the spec's name is %q (names are read without regard to case)", path, key, name)
		}
	}
	for _, name := range also {
		if key != name && strings.EqualFold(key, name) {
			return rule{}, false, fmt.Errorf("field %s%s: the spec's name is %q (names are read without regard to case)", path, key, name)
		}
	}
	return rule{}, false, nil
}

// mayFold reports whether a name the schema or Parse knows (knownNames)
// other than key may equal it but for letter case: for an ASCII key, one
// look-up of it in lower case (every name known is ASCII, so EqualFold is
// ASCII's); any other key may. ruleOf went through its map with
// EqualFold for every field not in it: OrderId and the renewal fields, 8%
// of BenchmarkParse.
func mayFold(key string) bool {
	var lower [64]byte
	if len(key) > len(lower) {
		return true
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= utf8.RuneSelf {
			return true
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	for _, name := range foldedNames[string(lower[:len(key)])] {
		if name != key {
			return true
		}
	}
	return false
}

// foldedNames is knownNames by their lower case.
var foldedNames = func() map[string][]string {
	m := map[string][]string{}
	for name := range knownNames {
		m[strings.ToLower(name)] = append(m[strings.ToLower(name)], name)
	}
	return m
}()

func (r rule) holds(v json.RawMessage) bool {
	switch r.kind {
	case kindString:
		return isText(v)
	case kindStringOrNumber:
		return isText(v) || isInt(v) || isNumber(v)
	case kindInt:
		return isInt(v)
	case kindIntOrDigits:
		return isInt(v) || isDigits(v)
	case kindCount:
		return isInt(v) || isDigits(v) || string(v) == "null"
	case kindIntOrNull:
		return isInt(v) || string(v) == "null"
	case kindBool:
		return string(v) == "true" || string(v) == "false"
	case kindDate:
		s, ok := text(v)
		_, err := time.Parse(certorder.DateLayout, s)
		return ok && err == nil
	case kindDateTime:
		s, ok := text(v)
		_, err := time.Parse(time.RFC3339, s)
		return ok && err == nil
	case kindNames:
		_, ok := names(v)
		return ok
	case kindObject:
		return len(v) > 0 && v[0] == '{'
	}
	return false
}

// names decodes a JSON array of strings, none holding NUL.
func names(v json.RawMessage) ([]string, bool) {
	if len(v) < 2 || v[0] != '[' {
		return nil, false
	}
	// The usual case, read without encoding/json: plain strings, a comma
	// between each two, no space (what CertCentral and an export write).
	var out []string
	rest := v[1 : len(v)-1]
	for plain := true; plain && len(rest) > 0; {
		if rest[0] != '"' {
			plain = false
			break
		}
		end := bytes.IndexByte(rest[1:], '"') + 1
		if end == 0 || !jsonscan.Plain(rest[1:end]) {
			plain = false
			break
		}
		out = append(out, string(rest[1:end]))
		if rest = rest[end+1:]; len(rest) > 0 {
			if rest[0] != ',' || len(rest) == 1 {
				plain = false
				break
			}
			rest = rest[1:]
		}
		if len(rest) == 0 {
			return out, true
		}
	}
	if len(rest) == 0 && out == nil {
		return []string{}, true // []
	}
	var ns []*string
	if json.Unmarshal(v, &ns) != nil {
		return nil, false
	}
	out = make([]string, len(ns))
	for i, n := range ns {
		if n == nil || strings.ContainsRune(*n, 0) {
			return nil, false
		}
		out[i] = *n
	}
	return out, true
}

// isText reports whether text(v) succeeds, for v valid JSON (a member of
// a checked document), without making the string: a JSON string decodes
// and holds a NUL only where it escapes one (\u0000), invalid UTF-8 being
// replaced. Escapes are common (a CSR's line breaks): decoding such a
// string with encoding/json was a tenth of a document's parse.
func isText(v json.RawMessage) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	for s := v[1 : len(v)-1]; ; {
		i := bytes.IndexByte(s, '\\')
		switch {
		case i < 0:
			return true
		case i+1 < len(s) && s[i+1] != 'u':
			s = s[i+2:]
		case i+6 <= len(s) && string(s[i+2:i+6]) != "0000":
			s = s[i+6:]
		default: // NUL, or not valid JSON after all
			_, ok := text(v)
			return ok
		}
	}
}

// text decodes a JSON string holding no NUL (which PostgreSQL's text refuses).
func text(v json.RawMessage) (string, bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && jsonscan.Plain(v[1:len(v)-1]) {
		return string(v[1 : len(v)-1]), true // valid JSON holds no raw control character, so no NUL
	}
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, !strings.ContainsRune(s, 0)
}

// isInt reports whether v is a JSON number without fraction or exponent
// that fits an int64.
func isInt(v json.RawMessage) bool {
	digits := bytes.TrimPrefix(v, []byte("-"))
	// ParseInt refuses what does not start with a digit here; not asked, it
	// makes no error (a string or null in a count field made three a document).
	if len(digits) == 0 || digits[0] < '0' || digits[0] > '9' || len(digits) > 1 && digits[0] == '0' || bytes.ContainsAny(digits, "+ ") {
		return false
	}
	_, err := strconv.ParseInt(string(v), 10, 64)
	return err == nil
}

// isDigits reports whether v is a JSON string of ASCII digits that fits an int64.
func isDigits(v json.RawMessage) bool {
	if len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	d := v[1 : len(v)-1]
	_, ok := jsonscan.ParsePositive(d)
	return ok || bytes.Equal(bytes.TrimLeft(d, "0"), nil) && len(d) > 0
}

func isNumber(v json.RawMessage) bool {
	var n json.Number
	return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') && json.Unmarshal(v, &n) == nil
}

// snippet is a value as an error quotes it: its start, by certorder's one
// rule for shown text (internal/printable), since the error reaches the
// operator's terminal and the sync's log.
func snippet(v json.RawMessage) string {
	return printable.Cut(string(v), 48)
}

// FieldType is the type the spec gives one field of an order, for tools
// that make documents the import accepts (internal/ordertest): Kind names
// what the field may hold (see kindName), Fields the members of an object
// the spec types.
type FieldType struct {
	Kind   string
	Fields map[string]FieldType
}

// Schema is the spec's typing of an order document, the certificate's
// members included under "certificate"; fields it does not hold are free.
func Schema() map[string]FieldType {
	s := schemaTypes(orderSchema)
	cert := s["certificate"]
	cert.Fields = schemaTypes(certificateSchema)
	s["certificate"] = cert
	return s
}

func schemaTypes(rules map[string]rule) map[string]FieldType {
	out := make(map[string]FieldType, len(rules))
	for name, r := range rules {
		t := FieldType{Kind: kindName[r.kind]}
		if r.fields != nil {
			t.Fields = schemaTypes(r.fields)
		}
		out[name] = t
	}
	return out
}

// kindName is each kind's name in Schema.
var kindName = map[kind]string{
	kindString:         "string",
	kindStringOrNumber: "string-or-number",
	kindInt:            "int",
	kindIntOrDigits:    "int-or-digits",
	kindCount:          "count",
	kindIntOrNull:      "int-or-null",
	kindBool:           "bool",
	kindDate:           "date",
	kindDateTime:       "date-time",
	kindNames:          "names",
	kindObject:         "object",
}
