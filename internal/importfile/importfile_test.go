package importfile_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/importfile"
	"github.com/certorder/certorder/internal/orderdoc"
)

func TestDecodeOrders(t *testing.T) {
	count := func(input string) (int, error) {
		n := 0
		for _, err := range importfile.Decode(strings.NewReader(input)) {
			if err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	one := `{"OrderId":5,"certificate":{"valid_till":"2030-01-01"}}`
	two := `{"OrderId":6,"certificate":{"valid_till":"2030-01-01"}}`
	for input, want := range map[string]int{one: 1, " \n" + one + "\n": 1, "[]": 0, "[" + one + "," + two + "]": 2} {
		if n, err := count(input); err != nil || n != want {
			t.Errorf("%q: %d orders, %v; want %d", input, n, err, want)
		}
	}
	for _, input := range []string{"", "5", "[" + one + ",", one + one, "[" + one + "] x", "[1]", `{"OrderId":`,
		"[" + one + "," + two + "," + one + "]"} {
		if _, err := count(input); !errors.Is(err, certorder.ErrInvalid) {
			t.Errorf("%q: err %v, want ErrInvalid", input, err)
		}
	}
}

// An error names the order (its place in the file and, when it can be
// found, its OrderId) and where in the file a syntax error is. The places
// were counted by hand (a Python one-liner) on each input.
func TestDecodeErrorsSayWhere(t *testing.T) {
	t.Parallel()
	good := `{"OrderId": 10001, "status": "issued", "certificate": {"valid_till": "2027-01-01"}}`
	for _, tc := range []struct{ input, want string }{
		{"[\n  " + good + ",\n  {\"OrderId\": 10002,\n   \"certificate\": {\"valid_till\": \"2027-01-01\",}}\n]",
			"order 2: OrderId 10002: not valid JSON at line 4, column 47 (byte 156): invalid character '}' looking for beginning of object key string"},
		{`[{"certificate": {"valid_till": 2027-01-01}}]`,
			"order 1: not valid JSON at line 1, column 37 (byte 36): invalid character '-' after object key:value pair"},
		{"{\"OrderId\": \"5\",\r\n \"x\": }",
			`OrderId 5: not valid JSON at line 2, column 7 (byte 24): invalid character '}' looking for beginning of value`},
		{"[\n" + good + ",\n  {\"OrderId\": 10002, \"certif",
			"order 2: the order ends early: it starts at line 3, column 3 (byte 89)"},
		{"[" + good + ", 7]", "order 2: not a JSON object, at line 1, column 87 (byte 86)"},
		{"[" + good + "]\n]", "data after the array of orders, at line 2, column 1 (byte 86)"},
		{good + "\n" + good, "data after the order, at line 2, column 1 (byte 84)"},
		{"[" + good + " x", `after order 1, 'x' where a comma or ] belongs, at line 1, column 86 (byte 85)`},
	} {
		var err error
		for _, err = range importfile.Decode(strings.NewReader(tc.input)) {
			if err != nil {
				break
			}
		}
		if !errors.Is(err, certorder.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s", tc.input, err, tc.want)
		}
	}
}

// A consumer that stops early does not leave the reading goroutine stuck.
func TestDecodeOrdersStopEarly(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := 1; i <= 2000; i++ {
		if i > 1 {
			b.WriteString(",")
		}
		b.WriteString(`{"OrderId":` + strconv.Itoa(i) + `,"certificate":{"valid_till":"2030-01-01"}}`)
	}
	b.WriteString("]")
	before := runtime.NumGoroutine()
	for range 10 {
		for o, err := range importfile.Decode(strings.NewReader(b.String())) {
			if err != nil || o.ID != 1 {
				t.Fatal(o, err)
			}
			break
		}
	}
	// Run has waited for its goroutines, but one that has signalled it is
	// done may not have exited yet: give them a moment, not a leak a pass.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		runtime.Gosched()
	}
	if after > before {
		t.Fatalf("%d goroutines before, %d after", before, after)
	}
}

// FuzzDecodeOrders feeds the import arbitrary files: the scanner that
// splits an array must agree with encoding/json reading the whole file,
// never panic, and yield the orders in the file's order.
func FuzzDecodeOrders(f *testing.F) {
	one := `{"OrderId":5,"certificate":{"valid_till":"2030-01-01"}}`
	two := `{"OrderId":6,"certificate":{"valid_till":"2030-01-01","note":"a}\"]{"}}`
	for _, s := range []string{"[]", "[" + one + "]", " [ " + one + " , " + two + " ] ", "[" + one + two + "]", "[" + one + ",]",
		"[" + one + "] x", "[" + one + `,{"OrderId":7,"certificate":{"valid_till":"2030-01-01"},}]`, "[1]", `[{"a":"\\"}]`, one} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		var got []int64
		var gotErr error
		for o, err := range importfile.Decode(bytes.NewReader(file)) {
			if err != nil {
				gotErr = err
				break
			}
			got = append(got, o.ID)
		}
		if gotErr != nil && !errors.Is(gotErr, certorder.ErrInvalid) {
			t.Fatalf("an error that is not ErrInvalid: %v", gotErr)
		}
		// The reference: the whole file through encoding/json.
		var want []int64
		var wantErr error
		trimmed := bytes.TrimLeft(file, " \t\r\n")
		var docs []json.RawMessage
		switch {
		case len(trimmed) > 0 && trimmed[0] == '{':
			docs = []json.RawMessage{trimmed}
			if !json.Valid(trimmed) {
				wantErr = errors.New("not JSON")
			}
		default:
			wantErr = json.Unmarshal(file, &docs)
		}
		seen := map[int64]bool{}
		for _, d := range docs {
			if wantErr != nil {
				break
			}
			o, err := orderdoc.Parse(d)
			if err == nil && seen[o.ID] {
				err = errors.New("twice")
			}
			if err != nil {
				wantErr = err
				break
			}
			seen[o.ID] = true
			want = append(want, o.ID)
		}
		if (gotErr == nil) != (wantErr == nil) || gotErr == nil && !slices.Equal(got, want) {
			t.Fatalf("%q: DecodeOrders %v %v; encoding/json %v %v", file, got, gotErr, want, wantErr)
		}
	})
}
