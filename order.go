package certorder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
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
	ValidTill  string   // certificate.valid_till, YYYY-MM-DD
	RenewedBy  int64    // the order that renewed this one; 0 if none
	Renews     int64    // filled in by ListOrders only: the lowest-numbered order this one renewed; 0 if none
	Doc        []byte
	CertEnd    int

	sum *[32]byte // the document's SHA-256, set only by a dry run (SyncDryRun), which keeps no document
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
// parse, 0 is returned.
func DaysRemaining(validTill string, now time.Time) int {
	till, err := time.Parse(DateLayout, validTill)
	if err != nil {
		return 0
	}
	y, m, d := now.UTC().Date()
	today := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return int(till.Sub(today).Hours()) / 24
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
// certificate object with valid_till as YYYY-MM-DD; every field the spec
// types must have its type, in the variations the spec allows (see
// schema.go); fields the spec does not know are kept whatever they hold.
// Every value is kept as it is, so that it comes back as the CA wrote it.
func ParseOrder(data []byte) (*Order, error) {
	return parseOrder(data, false)
}

// parseOrder is ParseOrder; checked says data already passed json.Valid.
func parseOrder(data []byte, checked bool) (*Order, error) {
	if len(data) > MaxOrderBytes {
		return nil, fmt.Errorf("the document is %d bytes, over the limit of %d", len(data), MaxOrderBytes)
	}
	top, err := readObject(data, checked)
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
			if err := json.Unmarshal(f.value, &o.Status); err != nil {
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
		if err := json.Compact(&doc, f.value); err != nil {
			return err
		}
	}
	doc.WriteByte('}')
	switch {
	case o.CertEnd == 0:
		return errors.New("certificate object is missing")
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
		switch f.key {
		case fieldDaysRemaining:
			continue
		case "valid_till":
			json.Unmarshal(f.value, &o.ValidTill) // checked by the schema below
		case "common_name":
			json.Unmarshal(f.value, &o.CommonName)
		case "dns_names":
			json.Unmarshal(f.value, &o.DNSNames)
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
		if err := json.Compact(doc, f.value); err != nil {
			return err
		}
	}
	if o.ValidTill == "" {
		return errors.New("certificate.valid_till is missing")
	}
	o.CertEnd = doc.Len()
	doc.WriteByte('}')
	return nil
}

func writeKey(doc *bytes.Buffer, key string) {
	k, _ := json.Marshal(key) // a string always marshals
	doc.Write(k)
	doc.WriteByte(':')
}

// DecodeOrders reads an import file: one order object, or an array of them.
// It yields each order as it is read, so a large file is never held whole in
// memory; after the first error it yields nothing more. Errors wrap
// ErrInvalid and name the order's place in the file; an OrderId that
// appears twice is refused (which of the two was meant is a guess).
// Reading and checking run one step ahead in a goroutine of their own, so
// that a store can write one order while the next is parsed.
func DecodeOrders(r io.Reader) iter.Seq2[*Order, error] {
	return func(yield func(*Order, error) bool) {
		type item struct {
			o   *Order
			err error
		}
		ch := make(chan item, 256)
		done := make(chan struct{})
		go func() {
			defer close(ch)
			decodeOrders(r, func(o *Order, err error) bool {
				select {
				case ch <- item{o, err}:
					return true
				case <-done:
					return false
				}
			})
		}()
		defer func() {
			close(done)
			for range ch { // let the reader finish
			}
		}()
		for it := range ch {
			if !yield(it.o, it.err) {
				return
			}
		}
	}
}

// decodeOrders is the reading half of DecodeOrders.
func decodeOrders(r io.Reader, yield func(*Order, error) bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	first, err := firstByte(br)
	if err != nil {
		yield(nil, fmt.Errorf("%w: the file holds no JSON object or array", ErrInvalid))
		return
	}
	dec := json.NewDecoder(br)
	if first == '{' {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			yield(nil, fmt.Errorf("%w: %v", ErrInvalid, err))
			return
		}
		o, err := parseOrder(raw, true)
		if err == nil && dec.More() {
			err = errors.New("data after the order")
		}
		if err != nil {
			yield(nil, fmt.Errorf("%w: %v", ErrInvalid, err))
			return
		}
		yield(o, nil)
		return
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		yield(nil, fmt.Errorf("%w: the file must hold an order object or an array of them", ErrInvalid))
		return
	}
	seen := map[int64]int{} // OrderId -> place in the file
	for i := 1; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			yield(nil, fmt.Errorf("%w: order %d: %v", ErrInvalid, i, err))
			return
		}
		o, err := parseOrder(raw, true)
		if err == nil && seen[o.ID] != 0 {
			err = fmt.Errorf("OrderId %d appears twice (also order %d)", o.ID, seen[o.ID])
		}
		if err != nil {
			yield(nil, fmt.Errorf("%w: order %d: %v", ErrInvalid, i, err))
			return
		}
		seen[o.ID] = i
		if !yield(o, nil) {
			return
		}
	}
	if _, err := dec.Token(); err != nil {
		yield(nil, fmt.Errorf("%w: %v", ErrInvalid, err))
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		yield(nil, fmt.Errorf("%w: data after the array of orders", ErrInvalid))
	}
}

func firstByte(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c, br.UnreadByte()
	}
}
