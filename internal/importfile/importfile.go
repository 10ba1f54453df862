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
	"regexp"

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
			at    pos // where the order starts
			raw   []byte
			o     *certorder.Order
			err   error // with raw: what is wrong if the document is right
		}
		seen := map[int64]int{} // OrderId -> place in the file
		inorder.Run(func(emit func(item) bool) {
			splitOrders(r, func(place int, at pos, raw []byte, err error) bool {
				return emit(item{place: place, at: at, raw: raw, err: err})
			})
		}, func(it item) item {
			if it.raw != nil {
				o, err := orderdoc.Parse(it.raw)
				if err != nil {
					it.err = located(err, it.raw, it.at)
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
// each to emit with its place (0 for a file of one object) and where it
// starts; an error ends it. An error at place -1 is the file's, to be
// reported as it is.
func splitOrders(r io.Reader, emit func(place int, at pos, raw []byte, err error) bool) {
	// The documents are split by a scanner that only matches braces and
	// strings (encoding/json's decoder took a fifth of an import's time);
	// each order is then checked in full, json.Valid first, by the workers.
	a := arrayScanner{br: bufio.NewReaderSize(r, 64<<10), at: pos{line: 1, col: 1}}
	first, err := a.skipSpace()
	if err != nil {
		emit(-1, a.at, nil, fmt.Errorf("%w: the file holds no JSON object or array", certorder.ErrInvalid))
		return
	}
	if first == '{' {
		at := a.at
		raw, err := a.object()
		switch {
		case err != nil:
			emit(0, at, nil, endsEarly(err, at))
		case dataAfter(&a):
			emit(0, at, raw, fmt.Errorf("data after the order, at %s", a.at)) // unless the order itself is wrong
		default:
			emit(0, at, raw, nil)
		}
		return
	}
	if first != '[' {
		emit(-1, a.at, nil, fmt.Errorf("%w: the file must hold an order object or an array of them", certorder.ErrInvalid))
		return
	}
	a.readByte() // '['
	for i := 1; ; i++ {
		c, err := a.skipSpace()
		switch {
		case err != nil:
			emit(-1, a.at, nil, fmt.Errorf("%w: the array of orders ends early, at %s", certorder.ErrInvalid, a.at))
			return
		case c == ']' && i == 1:
		case c == ']':
			emit(-1, a.at, nil, fmt.Errorf("%w: order %d: the array of orders ends after a comma, at %s", certorder.ErrInvalid, i, a.at))
			return
		case c != '{':
			emit(i, a.at, nil, fmt.Errorf("not a JSON object, at %s", a.at))
			return
		default:
			at := a.at
			raw, err := a.object()
			if err != nil {
				emit(i, at, nil, endsEarly(err, at))
				return
			}
			if !emit(i, at, raw, nil) {
				return
			}
			if c, err = a.skipSpace(); err != nil {
				emit(-1, a.at, nil, fmt.Errorf("%w: the array of orders ends early, at %s", certorder.ErrInvalid, a.at))
				return
			}
			if c == ',' {
				a.readByte()
				continue
			}
			if c != ']' {
				emit(-1, a.at, nil, fmt.Errorf("%w: after order %d, %q where a comma or ] belongs, at %s", certorder.ErrInvalid, i, c, a.at))
				return
			}
		}
		a.readByte() // ']'
		switch _, err := a.skipSpace(); {
		case err == nil:
			emit(-1, a.at, nil, fmt.Errorf("%w: data after the array of orders, at %s", certorder.ErrInvalid, a.at))
		case err != io.EOF:
			emit(-1, a.at, nil, fmt.Errorf("%w: %v", certorder.ErrInvalid, err))
		}
		return
	}
}

// pos is a place in the file: the byte offset (from 0), and the line and
// column (from 1, the column in bytes) of that byte.
type pos struct {
	off       int64
	line, col int
}

func (p pos) String() string {
	return fmt.Sprintf("line %d, column %d (byte %d)", p.line, p.col, p.off)
}

// step moves p past the byte c.
func (p *pos) step(c byte) {
	p.off++
	if c == '\n' {
		p.line, p.col = p.line+1, 1
	} else {
		p.col++
	}
}

// after is the place after b, which starts at p.
func (p pos) after(b []byte) pos {
	p.off += int64(len(b))
	if n := bytes.Count(b, []byte{'\n'}); n > 0 {
		p.line += n
		p.col = len(b) - bytes.LastIndexByte(b, '\n')
	} else {
		p.col += len(b)
	}
	return p
}

// endsEarly says where an order that does not end starts.
func endsEarly(err error, at pos) error {
	return fmt.Errorf("%w: it starts at %s", err, at)
}

// orderIDField finds a document's OrderId when the document is not JSON, to
// name the order in the error.
var orderIDField = regexp.MustCompile(`"OrderId"\s*:\s*"?(\d{1,19})\b`)

// located adds to a syntax error in raw, which starts at at, the place in
// the file (a document's own offsets would mean nothing to the operator)
// and the document's OrderId when it can be found.
func located(err error, raw []byte, at pos) error {
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		return err
	}
	// Offset counts the byte that is wrong; Parse does not trim a document
	// the scanner cut, which starts with its brace.
	off := min(max(int(syn.Offset)-1, 0), len(raw))
	where := at.after(raw[:off])
	if m := orderIDField.FindSubmatch(raw); m != nil {
		return fmt.Errorf("OrderId %s: not valid JSON at %s: %v", m[1], where, syn)
	}
	return fmt.Errorf("not valid JSON at %s: %v", where, syn)
}

// dataAfter reports whether a holds anything but JSON whitespace.
func dataAfter(a *arrayScanner) bool {
	_, err := a.skipSpace()
	return err != io.EOF
}

// arrayScanner reads the objects of a JSON array without decoding them,
// and keeps count of where it is in the file.
type arrayScanner struct {
	br *bufio.Reader
	at pos // of the next byte
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
		a.at.step(c)
	}
}

// readByte consumes the next byte, which the caller has seen.
func (a *arrayScanner) readByte() {
	if c, err := a.br.ReadByte(); err == nil {
		a.at.step(c)
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
			a.at = a.at.after(out)
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
