package orderdoc_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/orderdoc"
	"github.com/certorder/certorder/wire"
)

// FuzzParse feeds the order import arbitrary documents. It must never
// panic; an order it accepts must answer valid JSON that client.Order
// (the Go client's and the web page's reading) decodes, and
// parsing its stored document again must give the same document.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"OrderId":5,"certificate":{"valid_till":"2030-01-01"}}`))
	f.Add([]byte(`{"OrderId":5,"is_renewed":true,"was_renewed_by_order_id":6,"certificate":{"valid_till":"2030-01-01","dns_names":["a"]}}`))
	f.Add([]byte(`{"certificate":{},"OrderId":1}`))
	for _, name := range []string{"../../server/testdata/orders.json", "../../client/testdata/order_full.json", "../../client/testdata/order_odd.json"} {
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
		o, err := orderdoc.Parse(doc)
		if err != nil {
			return
		}
		answer := wire.AppendOrderInfo(nil, o, now)
		if !json.Valid(answer) {
			t.Fatalf("answer is not JSON: %s", answer)
		}
		var info client.Order
		if err := json.Unmarshal(answer, &info); err != nil || info.OrderID != o.ID {
			t.Fatalf("an accepted order does not decode: %v\n%s", err, answer)
		}
		again, err := orderdoc.Parse(o.Doc)
		if err != nil {
			t.Fatalf("stored document does not parse again: %v\n%s", err, o.Doc)
		}
		if !bytes.Equal(again.Doc, o.Doc) || again.CertEnd != o.CertEnd || again.ID != o.ID {
			t.Fatalf("parsing is not stable:\n%s\n%s", o.Doc, again.Doc)
		}
		if c, err := orderdoc.StoredCertificate(o.Doc); err != nil || !reflect.DeepEqual(c, o.Certificate) {
			t.Fatalf("the stored document's certificate %+v (%v), parsed %+v", c, err, o.Certificate)
		}
	})
}

// FuzzValid checks that the validator Parse uses (segmentio's json.Valid)
// accepts exactly what encoding/json's does.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,-0.5e+3,true,null,"\u00e9\n"]}`, "{\"a\":\"\xff\"}", `{"a":01}`, `{"a":1.}`,
		`{"a":-}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", ` {"a" : 1 } `, "\ufeff{}", `{"a":1,}`, `[1,2]`, `"s"`, `1e5`, `{"a":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Add([]byte(benchDoc))
	f.Fuzz(func(t *testing.T, data []byte) {
		if std, got := json.Valid(data), orderdoc.Valid(data); std != got {
			t.Fatalf("encoding/json says %v, Parse's validator %v, of %q", std, got, data)
		}
	})
}
