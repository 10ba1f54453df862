package certorder_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/wire"
)

// FuzzParseOrder feeds the order import arbitrary documents. It must never
// panic; an order it accepts must answer valid JSON that the typed
// OrderInfo (the Go client's Order, the web page's reading) decodes, and
// parsing its stored document again must give the same document.
func FuzzParseOrder(f *testing.F) {
	f.Add([]byte(`{"OrderId":5,"certificate":{"valid_till":"2030-01-01"}}`))
	f.Add([]byte(`{"OrderId":5,"is_renewed":true,"was_renewed_by_order_id":6,"certificate":{"valid_till":"2030-01-01","dns_names":["a"]}}`))
	f.Add([]byte(`{"certificate":{},"OrderId":1}`))
	for _, name := range []string{"server/testdata/orders.json", "client/testdata/order_full.json", "client/testdata/order_odd.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var docs []json.RawMessage
		if json.Unmarshal(b, &docs) != nil {
			docs = []json.RawMessage{b}
		}
		for _, d := range docs {
			f.Add([]byte(d))
		}
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, doc []byte) {
		o, err := certorder.ParseOrder(doc)
		if err != nil {
			return
		}
		answer := wire.AppendOrderInfo(nil, o, now)
		if !json.Valid(answer) {
			t.Fatalf("answer is not JSON: %s", answer)
		}
		var info certorder.OrderInfo
		if err := json.Unmarshal(answer, &info); err != nil || info.OrderID != o.ID {
			t.Fatalf("an accepted order does not decode: %v\n%s", err, answer)
		}
		again, err := certorder.ParseOrder(o.Doc)
		if err != nil {
			t.Fatalf("stored document does not parse again: %v\n%s", err, o.Doc)
		}
		if !bytes.Equal(again.Doc, o.Doc) || again.CertEnd != o.CertEnd || again.ID != o.ID {
			t.Fatalf("parsing is not stable:\n%s\n%s", o.Doc, again.Doc)
		}
	})
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
		for o, err := range certorder.DecodeOrders(bytes.NewReader(file)) {
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
			o, err := certorder.ParseOrder(d)
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
