package certorder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"time"

	"github.com/certorder/certorder/internal/jsonscan"
)

// Order is one certificate order as stored.
//
// Doc is the document as the CA returned it and the operator imported it,
// compacted, every value byte for byte as imported (so numbers sent as strings
// stay strings), minus the fields derived at answer time: is_renewed,
// was_renewed_by_order_id and certificate.days_remaining. AppendJSON puts
// them back, so an answer is one read and one write of the document.
type Order struct {
	ID         int64
	MemberID   int64
	Member     string // member name
	CommonName string // certificate.common_name
	Status     string // order status, an open set of strings
	ValidTill  string // certificate.valid_till, YYYY-MM-DD
	RenewedBy  int64  // the order that renewed this one; 0 if none
	Doc        []byte
	CertEnd    int // offset in Doc of the closing brace of the certificate object
}

// DateLayout is the layout of the spec's YYYY-MM-DD dates.
const DateLayout = "2006-01-02"

// AppendJSON appends the OrderInfo answer for the order: the stored
// document with days_remaining computed for today (UTC) and the renewal
// relation filled in. was_renewed_by_order_id is present only when
// is_renewed is true.
func (o *Order) AppendJSON(b []byte, now time.Time) []byte {
	doc := o.Doc
	b = append(b, doc[:o.CertEnd]...)
	if doc[o.CertEnd-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, `"days_remaining":`...)
	b = strconv.AppendInt(b, int64(DaysRemaining(o.ValidTill, now)), 10)
	b = append(b, doc[o.CertEnd:len(doc)-1]...)
	if o.RenewedBy != 0 {
		b = append(b, `,"is_renewed":true,"was_renewed_by_order_id":`...)
		b = strconv.AppendInt(b, o.RenewedBy, 10)
	} else {
		b = append(b, `,"is_renewed":false`...)
	}
	return append(b, '}')
}

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

// ParseOrderID reads an order number as the API accepts it: a JSON integer
// or a JSON string of digits, from 1 to the largest int64. Anything else
// (fractions, exponents, signs, spaces, booleans, null, objects) is refused.
func ParseOrderID(raw []byte) (int64, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	return parsePositive(raw)
}

// parsePositive parses text made only of ASCII digits into an int64 > 0.
func parsePositive(text []byte) (int64, bool) {
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
	data = bytes.TrimSpace(data)
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
// certificate object with valid_till as YYYY-MM-DD; every other field is kept
// as it is, whatever its type, so that it comes back as the CA wrote it.
func ParseOrder(data []byte) (*Order, error) {
	return parseOrder(data, false)
}

// parseOrder is ParseOrder; checked says data already passed json.Valid.
func parseOrder(data []byte, checked bool) (*Order, error) {
	top, err := readObject(data, checked)
	if err != nil {
		return nil, err
	}
	o := &Order{}
	var doc bytes.Buffer
	doc.WriteByte('{')
	isRenewed := false
	for _, f := range top {
		switch f.key {
		case "OrderId":
			id, ok := parsePositive(f.value)
			if !ok {
				return nil, errors.New("OrderId must be a positive integer")
			}
			o.ID = id
		case "status":
			if err := json.Unmarshal(f.value, &o.Status); err != nil {
				return nil, errors.New("status must be a string")
			}
		case fieldIsRenewed:
			if err := json.Unmarshal(f.value, &isRenewed); err != nil {
				return nil, errors.New("is_renewed must be true or false")
			}
			continue
		case fieldRenewedBy:
			if string(f.value) == "null" || string(f.value) == "0" {
				continue
			}
			id, ok := parsePositive(f.value)
			if !ok {
				return nil, errors.New("was_renewed_by_order_id must be a positive integer")
			}
			o.RenewedBy = id
			continue
		}
		if doc.Len() > 1 {
			doc.WriteByte(',')
		}
		writeKey(&doc, f.key)
		if f.key == "certificate" {
			if err := o.writeCertificate(&doc, f.value); err != nil {
				return nil, fmt.Errorf("certificate: %w", err)
			}
			continue
		}
		if err := json.Compact(&doc, f.value); err != nil {
			return nil, err
		}
	}
	doc.WriteByte('}')
	switch {
	case o.ID == 0:
		return nil, errors.New("OrderId is missing")
	case o.CertEnd == 0:
		return nil, errors.New("certificate object is missing")
	case isRenewed != (o.RenewedBy != 0):
		return nil, errors.New("is_renewed and was_renewed_by_order_id disagree")
	case o.RenewedBy == o.ID:
		return nil, errors.New("an order cannot renew itself")
	}
	o.Doc = doc.Bytes()
	return o, nil
}

func (o *Order) writeCertificate(doc *bytes.Buffer, value json.RawMessage) error {
	fields, err := readObject(value, true)
	if err != nil {
		return err
	}
	doc.WriteByte('{')
	n := 0
	for _, f := range fields {
		switch f.key {
		case fieldDaysRemaining:
			continue
		case "valid_till":
			if json.Unmarshal(f.value, &o.ValidTill) != nil {
				return errors.New("valid_till must be a string")
			}
			if _, err := time.Parse(DateLayout, o.ValidTill); err != nil {
				return fmt.Errorf("valid_till %q is not YYYY-MM-DD", o.ValidTill)
			}
		case "common_name":
			if json.Unmarshal(f.value, &o.CommonName) != nil {
				return errors.New("common_name must be a string")
			}
		case "dns_names":
			var names []string
			if json.Unmarshal(f.value, &names) != nil {
				return errors.New("dns_names must be an array of strings")
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
		return errors.New("valid_till is missing")
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
// ErrInvalid and name the order's place in the file. Reading and checking
// run one step ahead in a goroutine of their own, so that a store can write
// one order while the next is parsed.
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
	for i := 1; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			yield(nil, fmt.Errorf("%w: order %d: %v", ErrInvalid, i, err))
			return
		}
		o, err := parseOrder(raw, true)
		if err != nil {
			yield(nil, fmt.Errorf("%w: order %d: %v", ErrInvalid, i, err))
			return
		}
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
