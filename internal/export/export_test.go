package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/certorder/certorder/internal/ordertest"
)

// orderLine is an order line as Write writes it.
func orderLine(t testing.TB, member string, id, renewedBy int64, doc []byte) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(line{Type: "order", Member: member, OrderID: id, RenewedBy: renewedBy, Doc: doc}); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// sameAsDecode fails unless parseLine gives for b what decodeLine gives.
func sameAsDecode(t testing.TB, b []byte) {
	t.Helper()
	fast, errFast := parseLine(b)
	slow, errSlow := decodeLine(b)
	if fmt.Sprint(errFast) != fmt.Sprint(errSlow) || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("line %s:\nparseLine  %+v, %v\ndecodeLine %+v, %v", b, fast.Order, errFast, slow.Order, errSlow)
	}
}

// The order lines Write writes take parseOrderLine's path and read as
// encoding/json reads them.
func TestOrderLineFastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 1))
	for i := range 2000 {
		id := int64(1 + r.IntN(1<<40))
		var renewedBy int64
		if i%2 == 0 {
			renewedBy = id + 1 + int64(r.IntN(100))
		}
		member := []string{"a", "bench", "Alice.B@x_y-z", "m" + fmt.Sprint(i)}[i%4]
		b := orderLine(t, member, id, renewedBy, ordertest.RandomDocument(r, id))
		if _, ok := parseOrderLine(b); !ok {
			t.Fatalf("parseOrderLine refused %s", b)
		}
		sameAsDecode(t, b)
	}
}

// Lines in any other form, or wrong, read as encoding/json reads them.
func TestOrderLineOtherForms(t *testing.T) {
	doc := `{"OrderId":7,"certificate":{"common_name":"a.example","valid_till":"2030-01-01"},"status":"issued"}`
	for _, l := range []string{
		`{"type":"order","member":"a","order_id":7,"doc":` + doc + `}`,
		`{"type":"order","member":"a","order_id":7,"renewed_by":8,"doc":` + doc + `}`,
		`{"type":"order","member":"a","order_id":7,"renewed_by":0,"doc":` + doc + `}`,
		`{"type":"order","member":"a","order_id":7,"renewed_by":-1,"doc":` + doc + `}`,
		`{"type":"order","member":"a","order_id":7,"renewed_by":7,"doc":` + doc + `}`,
		`{"type":"order","member":"a","order_id":07,"doc":` + doc + `}`,
		`{"type":"order","member":"a","order_id":7.0,"doc":` + doc + `}`,
		`{"type":"order","member":"a","order_id":8,"doc":` + doc + `}`,
		`{"type":"order","member":"a","order_id":99999999999999999999,"doc":` + doc + `}`,
		`{"type":"order","member":"","order_id":7,"doc":` + doc + `}`,
		`{"type":"order","member":"\u0061","order_id":7,"doc":` + doc + `}`,
		`{"type":"order","member":"é","order_id":7,"doc":` + doc + `}`,
		"{\"type\":\"order\",\"member\":\"\xff\",\"order_id\":7,\"doc\":" + doc + `}`,
		`{"type":"order","member":"a","order_id":7,"doc":` + doc + ` }`,
		`{"type":"order","member":"a","order_id":7,"doc": ` + doc + `}`,
		`{"type":"order","member":"a","order_id":7,"doc":` + doc + `} `,
		`{"type":"order","member":"a","order_id":7,"doc":` + doc + `}}`,
		`{"type":"order","member":"a","order_id":7,"doc":` + doc + `,"member":"b"}`,
		`{"type":"order","member":"a","order_id":7,"doc":` + doc + `,"doc":{}}`,
		`{"type":"order","member":"a","order_id":7,"doc":{"x":1},"y":` + doc + `}`,
		`{"type":"order","member":"a","order_id":7,"doc":` + doc[:len(doc)-1] + `}`,
		`{"Type":"order","member":"a","order_id":7,"doc":` + doc + `}`,
		`{"type":"order","Member":"a","order_id":7,"doc":` + doc + `}`,
		`{"type":"order","member":"a","order_id":7,"doc":{"OrderId":7}}`,
		`{"type":"order","member":"a","order_id":7,"doc":[]}`,
		`{"type":"order","member":"a","order_id":7,"doc":{}}`,
		`{"type":"order","member":"a","order_id":7,"doc":{}}}`,
		`{"type":"order","member":"a","order_id":7,"doc":{"}`,
		`{"type":"order","member":"a","order_id":7,"doc":}`,
		`{"type":"order","member":"a","order_id":7,"doc"`,
		`{"type":"order","member":"a","order_id":`,
		`{"type":"order","member":"a`,
		`{"type":"order","member":"`,
		`{"type":"member","name":"a"}`,
	} {
		sameAsDecode(t, []byte(l))
	}
}

// Whatever the line, parseLine and decodeLine agree.
func FuzzParseLine(f *testing.F) {
	r := rand.New(rand.NewPCG(25, 2))
	for i := range 8 {
		f.Add(orderLine(f, "bench", int64(i+1), int64(i%2*(i+2)), ordertest.RandomDocument(r, int64(i+1))))
	}
	f.Add([]byte(`{"type":"order","member":"a","order_id":7,"doc":{"OrderId":7,"certificate":{"valid_till":"2030-01-01"}},"x":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) { sameAsDecode(t, b) })
}
