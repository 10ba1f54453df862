// Package importfile reads an operator's import file: one order document,
// or a JSON array of them, split without decoding and checked by
// orderdoc.Parse on a few goroutines. It imports the root package,
// internal/orderdoc, internal/inorder and the standard library.
package importfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/inorder"
	"github.com/certorder/certorder/internal/orderdoc"
)

// Decode reads an import file: one order object, or an array of them.
// It yields each order as it is read, so a large file is never held whole in
// memory; after the first error it yields nothing more. Errors wrap
// certorder.ErrInvalid and name the order's place in the file; an OrderId that
// appears twice is refused (which of the two was meant is a guess).
// Reading runs ahead in a goroutine of its own, and checking in a few (as
// many as there are CPUs, up to 4), so that a store writes orders while the
// next ones are parsed; the orders come out in the file's order.
func Decode(r io.Reader) iter.Seq2[*certorder.Order, error] {
	return func(yield func(*certorder.Order, error) bool) {
		type item struct {
			place int // in the file, from 1; 0 for a file of one object; -1: err is the file's, as it is
			raw   []byte
			o     *certorder.Order
			err   error // with raw: what is wrong if the document is right
		}
		seen := map[int64]int{} // OrderId -> place in the file
		inorder.Run(func(emit func(item) bool) {
			splitOrders(r, func(place int, raw []byte, err error) bool {
				return emit(item{place: place, raw: raw, err: err})
			})
		}, func(it item) item {
			if it.raw != nil {
				o, err := orderdoc.Parse(it.raw)
				if err != nil {
					it.err = err
				} else if it.err == nil {
					it.o = o
				}
				it.raw = nil
			}
			return it
		}, func(it item) bool {
			err := it.err
			if err == nil && seen[it.o.ID] != 0 {
				err = fmt.Errorf("OrderId %d appears twice (also order %d)", it.o.ID, seen[it.o.ID])
			}
			if err != nil {
				switch it.place {
				case 0:
					err = fmt.Errorf("%w: %v", certorder.ErrInvalid, err)
				case -1:
				default:
					err = fmt.Errorf("%w: order %d: %v", certorder.ErrInvalid, it.place, err)
				}
				yield(nil, err)
				return false
			}
			seen[it.o.ID] = it.place
			return yield(it.o, nil)
		})
	}
}

// splitOrders reads the documents of an import file, in order, and hands
// each to emit with its place (0 for a file of one object); an error ends
// it. An error at place -1 is the file's, to be reported as it is.
func splitOrders(r io.Reader, emit func(place int, raw []byte, err error) bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	first, err := firstByte(br)
	if err != nil {
		emit(-1, nil, fmt.Errorf("%w: the file holds no JSON object or array", certorder.ErrInvalid))
		return
	}
	if first == '{' {
		dec := json.NewDecoder(br)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			emit(0, nil, err)
			return
		}
		if dataAfter(io.MultiReader(dec.Buffered(), br)) {
			emit(0, raw, errors.New("data after the order")) // unless the order itself is wrong
			return
		}
		emit(0, raw, nil)
		return
	}
	if first != '[' {
		emit(-1, nil, fmt.Errorf("%w: the file must hold an order object or an array of them", certorder.ErrInvalid))
		return
	}
	// The array is split by a scanner that only matches braces and
	// strings (encoding/json's decoder took a fifth of an import's time);
	// each order is then checked in full, json.Valid first, by the workers.
	br.ReadByte() // '['
	a := arrayScanner{br: br}
	for i := 1; ; i++ {
		c, err := a.skipSpace()
		switch {
		case err != nil:
			emit(-1, nil, fmt.Errorf("%w: the array of orders ends early", certorder.ErrInvalid))
			return
		case c == ']' && i == 1:
		case c == ']':
			emit(-1, nil, fmt.Errorf("%w: order %d: the array of orders ends after a comma", certorder.ErrInvalid, i))
			return
		case c != '{':
			emit(i, nil, errors.New("not a JSON object"))
			return
		default:
			raw, err := a.object()
			if err != nil {
				emit(i, nil, err)
				return
			}
			if !emit(i, raw, nil) {
				return
			}
			if c, err = a.skipSpace(); err != nil {
				emit(-1, nil, fmt.Errorf("%w: the array of orders ends early", certorder.ErrInvalid))
				return
			}
			if c == ',' {
				a.br.ReadByte()
				continue
			}
			if c != ']' {
				emit(-1, nil, fmt.Errorf("%w: after order %d, %q where a comma or ] belongs", certorder.ErrInvalid, i, c))
				return
			}
		}
		a.br.ReadByte() // ']'
		switch _, err := a.skipSpace(); {
		case err == nil:
			emit(-1, nil, fmt.Errorf("%w: data after the array of orders", certorder.ErrInvalid))
		case err != io.EOF:
			emit(-1, nil, fmt.Errorf("%w: %v", certorder.ErrInvalid, err))
		}
		return
	}
}

// dataAfter reports whether r holds anything but JSON whitespace.
func dataAfter(r io.Reader) bool {
	a := arrayScanner{br: bufio.NewReader(r)}
	_, err := a.skipSpace()
	return err != io.EOF
}

// arrayScanner reads the objects of a JSON array without decoding them.
type arrayScanner struct {
	br *bufio.Reader
}

// skipSpace skips JSON whitespace and returns the next byte, unread.
func (a *arrayScanner) skipSpace() (byte, error) {
	for {
		c, err := a.br.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c, a.br.UnreadByte()
		}
	}
}

// object reads the object that starts at the next byte, up to its closing
// brace, matching braces and brackets outside strings. It does not check
// the JSON: the caller does. Strings, most of a document, are skipped by
// bytes.IndexByte rather than byte by byte (200,000 orders: 0.88 s of CPU
// before).
func (a *arrayScanner) object() ([]byte, error) {
	var out []byte
	depth, inString, escaped := 0, false, false
	for {
		chunk, err := a.br.Peek(max(1, a.br.Buffered()))
		if len(chunk) == 0 {
			if err == io.EOF {
				err = errors.New("the order ends early")
			}
			return nil, err
		}
		end := -1 // the index of the closing brace in chunk
	scan:
		for i := 0; i < len(chunk); i++ {
			switch c := chunk[i]; {
			case escaped:
				escaped = false
			case inString:
				j := stringStop(chunk[i:])
				if j < 0 {
					break scan
				}
				i += j
				if chunk[i] == '\\' {
					escaped = true
				} else {
					inString = false
				}
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth--; depth == 0 {
					end = i
					break scan
				}
			}
		}
		// The limit as a check after every byte before the closing brace
		// would put it: len(out)+i > MaxOrderBytes+1.
		last := len(chunk) - 1
		if end >= 0 {
			last = end - 1
		}
		if last >= 0 && len(out)+last > certorder.MaxOrderBytes+1 {
			return nil, fmt.Errorf("the document is over the limit of %d bytes", certorder.MaxOrderBytes)
		}
		if end >= 0 {
			out = append(out, chunk[:end+1]...)
			a.br.Discard(end + 1)
			return out, nil
		}
		out = append(out, chunk...)
		a.br.Discard(len(chunk))
	}
}

// stringStop is the index in s of the first quote or backslash, -1 if none.
func stringStop(s []byte) int {
	q := bytes.IndexByte(s, '"')
	if q < 0 {
		q = len(s)
	}
	if b := bytes.IndexByte(s[:q], '\\'); b >= 0 {
		return b
	}
	if q == len(s) {
		return -1
	}
	return q
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
