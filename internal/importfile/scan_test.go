package importfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/ordertest"
)

// objectByteByByte is object as it was before it skipped strings with
// bytes.IndexByte: the reference it must agree with.
func (a *arrayScanner) objectByteByByte() ([]byte, error) {
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
		for i, c := range chunk {
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
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth--; depth == 0 {
					out = append(out, chunk[:i+1]...)
					a.br.Discard(i + 1)
					return out, nil
				}
			}
			if len(out)+i > certorder.MaxOrderBytes+1 {
				return nil, fmt.Errorf("the document is over the limit of %d bytes", certorder.MaxOrderBytes)
			}
		}
		out = append(out, chunk...)
		a.br.Discard(len(chunk))
	}
}

// sameObject fails unless object and objectByteByByte read the same from
// input, read through a buffer of size bytes, and leave the same behind.
func sameObject(t *testing.T, input []byte, size int) {
	t.Helper()
	a := arrayScanner{br: bufio.NewReaderSize(bytes.NewReader(input), size)}
	b := arrayScanner{br: bufio.NewReaderSize(bytes.NewReader(input), size)}
	got, errGot := a.object()
	want, errWant := b.objectByteByByte()
	restGot, _ := io.ReadAll(a.br)
	restWant, _ := io.ReadAll(b.br)
	if !bytes.Equal(got, want) || fmt.Sprint(errGot) != fmt.Sprint(errWant) || !bytes.Equal(restGot, restWant) {
		t.Fatalf("input %.200q (buffer %d):\nobject %.200q, %v, rest %d bytes\nbefore %.200q, %v, rest %d bytes",
			input, size, got, errGot, len(restGot), want, errWant, len(restWant))
	}
}

func TestObjectAsByteByByte(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 3))
	big := strings.Repeat("x", certorder.MaxOrderBytes)
	inputs := []string{`{}`, `{"a":"}"}`, `{"a":"\"}"}, 1`, `{"a":"\\"}]`, `{"a":[{"b":"\\\""}]}`, `{"a"`, `{"a":"\`, `{`,
		`{"a":"` + big[:certorder.MaxOrderBytes-8] + `"}`, `{"a":"` + big[:certorder.MaxOrderBytes-7] + `"}`,
		`{"a":"` + big[:certorder.MaxOrderBytes-6] + `"}`, `{"a":"` + big[:certorder.MaxOrderBytes-5] + `"}`,
		`{"a":"` + big + `"}`, `{"a":"` + big}
	for i := range 300 {
		doc := ordertest.RandomDocument(r, int64(i+1))
		inputs = append(inputs, string(doc)+",\n", string(doc[:r.IntN(len(doc))]))
	}
	for _, in := range inputs {
		for _, size := range []int{16, 17, 64, 4096, 64 << 10} {
			sameObject(t, []byte(in), size)
		}
	}
}

func FuzzObject(f *testing.F) {
	f.Add([]byte(`{"a":"\"}\\","b":[1,{"c":2}]} ,`), 16)
	f.Fuzz(func(t *testing.T, input []byte, size int) {
		sameObject(t, input, 16+size%100)
	})
}
