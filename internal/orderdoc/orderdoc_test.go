package orderdoc_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/orderdoc"
	"github.com/certorder/certorder/internal/ordertest"
	"github.com/certorder/certorder/wire"
)

// An order whose status says it is not issued yet (any status but issued,
// revoked and expired, known or not) needs no certificate dates.
func TestParseNotIssued(t *testing.T) {
	for _, status := range []string{"pending", "needs_approval", "processing", "waiting_pickup", "reissue_pending",
		"rejected", "canceled", "a_status_not_known_yet"} {
		o, err := orderdoc.Parse([]byte(`{"OrderId":5,"status":"` + status + `","certificate":{"common_name":"a.example"}}`))
		if err != nil || o.Certificate.ValidTill != "" || o.Status != status {
			t.Errorf("%s: %+v, %v", status, o, err)
		}
	}
	if _, err := orderdoc.Parse([]byte(`{"OrderId":5,"status":"Issued","certificate":{}}`)); err == nil {
		t.Error(`status "Issued" without valid_till was accepted`)
	}
	_, err := orderdoc.Parse([]byte(`{"OrderId":5,"status":"issued","certificate":{}}`))
	if err == nil || !strings.Contains(err.Error(), "OrderId 5") || !strings.Contains(err.Error(), "certificate.valid_till") {
		t.Errorf("issued without valid_till: %v", err)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"not an object":      `[1]`,
		"no OrderId":         `{"certificate":{"valid_till":"2030-01-01"}}`,
		"OrderId string":     `{"OrderId":"5","certificate":{"valid_till":"2030-01-01"}}`,
		"OrderId fraction":   `{"OrderId":5.5,"certificate":{"valid_till":"2030-01-01"}}`,
		"no certificate":     `{"OrderId":5}`,
		"certificate array":  `{"OrderId":5,"certificate":[]}`,
		"no valid_till":      `{"OrderId":5,"certificate":{}}`,
		"issued, no till":    `{"OrderId":5,"status":"issued","certificate":{"valid_from":"2030-01-01"}}`,
		"revoked, no till":   `{"OrderId":5,"status":"revoked","certificate":{}}`,
		"' issued', no till": `{"OrderId":5,"status":" issued","certificate":{}}`, // as a person reads it
		"Expired\\n no till": `{"OrderId":5,"status":"Expired\n","certificate":{}}`,
		"is\\u200bsued":      `{"OrderId":5,"status":"\u200bis\u200bsued","certificate":{}}`,
		"blank, no till":     `{"OrderId":5,"status":" \u3000","certificate":{}}`,
		"pending, null till": `{"OrderId":5,"status":"pending","certificate":{"valid_till":null}}`,
		"pending, '' till":   `{"OrderId":5,"status":"pending","certificate":{"valid_till":""}}`,
		"bad valid_till":     `{"OrderId":5,"certificate":{"valid_till":"01/01/2030"}}`,
		"dns_names a string": `{"OrderId":5,"certificate":{"valid_till":"2030-01-01","dns_names":"a.example"}}`,
		"renewed, no order":  `{"OrderId":5,"is_renewed":true,"certificate":{"valid_till":"2030-01-01"}}`,
		"order, not renewed": `{"OrderId":5,"is_renewed":false,"was_renewed_by_order_id":6,"certificate":{"valid_till":"2030-01-01"}}`,
		"renews itself":      `{"OrderId":5,"is_renewed":true,"was_renewed_by_order_id":5,"certificate":{"valid_till":"2030-01-01"}}`,
		"status a number":    `{"OrderId":5,"status":1,"certificate":{"valid_till":"2030-01-01"}}`,
		"trailing data":      `{"OrderId":5,"certificate":{"valid_till":"2030-01-01"}} x`,
		// encoding/json would read these as the spec's fields, unchecked.
		"product, other case":        `{"OrderId":5,"produCt":0,"certificate":{"valid_till":"2030-01-01"}}`,
		"valid_till, other case":     `{"OrderId":5,"status":"pending","certificate":{"Valid_Till":"someday"}}`,
		"name_id, other case":        `{"OrderId":5,"product":{"Name_ID":1},"certificate":{"valid_till":"2030-01-01"}}`,
		"OrderId, other case":        `{"OrderId":5,"orderid":"x","certificate":{"valid_till":"2030-01-01"}}`,
		"is_renewed, other case":     `{"OrderId":5,"Is_Renewed":false,"certificate":{"valid_till":"2030-01-01"}}`,
		"days_remaining, other case": `{"OrderId":5,"certificate":{"valid_till":"2030-01-01","DAYS_REMAINING":1}}`,
		// Unicode folding: the Kelvin sign is k, the long s is s.
		"key_size, Kelvin sign": `{"OrderId":5,"certificate":{"valid_till":"2030-01-01","\u212aey_size":"x"}}`,
		"status, long s":        `{"OrderId":5,"\u017ftatus":1,"certificate":{"valid_till":"2030-01-01"}}`,
	} {
		if _, err := orderdoc.Parse([]byte(doc)); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
}

// A name twice in one object is refused, whether the spec knows it or
// not, written plain or escaped, in the order, its certificate or an
// object inside them; the same name in two objects is not twice.
func TestParseDuplicates(t *testing.T) {
	for name, doc := range map[string]string{
		"OrderId":             `{"OrderId":5,"OrderId":6,"certificate":{"valid_till":"2030-01-01"}}`,
		"escaped":             `{"OrderId":5,"x":0,"Order\u0049d":5,"certificate":{"valid_till":"2030-01-01"}}`,
		"unknown":             `{"OrderId":5,"x":1,"y":1,"x":2,"certificate":{"valid_till":"2030-01-01"}}`,
		"unknown, escaped":    `{"OrderId":5,"x":1,"\u0078":1,"certificate":{"valid_till":"2030-01-01"}}`,
		"certificate's":       `{"OrderId":5,"certificate":{"common_name":"a","valid_till":"2030-01-01","common_name":"b"}}`,
		"certificate unknown": `{"OrderId":5,"certificate":{"z":1,"valid_till":"2030-01-01","z":1}}`,
		"product's":           `{"OrderId":5,"product":{"name":"a","name":"b"},"certificate":{"valid_till":"2030-01-01"}}`,
	} {
		if _, err := orderdoc.Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "appears twice") {
			t.Errorf("%s: %s: %v, want \"appears twice\"", name, doc, err)
		}
	}
	ok := `{"OrderId":5,"status":"issued","x":1,"product":{"name":"a","status":1,"x":2},` +
		`"certificate":{"status":"issued","x":3,"valid_till":"2030-01-01","ca_cert":{"name":"b"}}}`
	if _, err := orderdoc.Parse([]byte(ok)); err != nil {
		t.Errorf("the same names in different objects: %v", err)
	}
}

// Every field the spec types is checked at import, in exactly the
// variations the spec allows; the message names the order and the field.
func TestParseTypes(t *testing.T) {
	doc := func(order, cert string) string {
		return `{"OrderId":5,` + order + `"certificate":{` + cert + `"valid_till":"2030-01-01"}}`
	}
	for _, tc := range []struct {
		name, order, cert string
		field             string // named in the error; "" when accepted
	}{
		{name: "spec's variations", order: `"purchased_wildcard_names":null,"purchased_dns_names":2,"validity_years":1,` +
			`"date_created":"2026-11-21T08:00:00+09:00","order_valid_from":"2026-01-01","product":{"name":"x","csr_required":true},` +
			`"api_key":{"name":"k","url_mask":"*"},"extra":{"any":[1.5,null]},`,
			cert: `"user_id":42,"receipt_id":"880004","purchased_dns_names":"2","purchased_wildcard_names":null,"id":7,` +
				`"dns_names":["a","b"],"cert_validity":{"days":90},"ca_cert":{"id":"A1","name":"CA"},"is_rsassa_pss":false,`},
		{name: "user_id a string", cert: `"user_id":"42",`},
		{name: "validity_years a fraction", order: `"validity_years":1.5,`, field: "validity_years"},
		{name: "validity_years a string", order: `"validity_years":"1",`, field: "validity_years"},
		{name: "product a string", order: `"product":"Basic OV",`, field: "product"},
		{name: "product.csr_required a string", order: `"product":{"csr_required":"yes"},`, field: "product.csr_required"},
		{name: "date_created a number", order: `"date_created":20260101,`, field: "date_created"},
		{name: "date_created without offset", order: `"date_created":"2026-01-01T10:00:00",`, field: "date_created"},
		{name: "order_valid_till not a date", order: `"order_valid_till":"01/01/2030",`, field: "order_valid_till"},
		{name: "order count a string", order: `"purchased_dns_names":"2",`, field: "purchased_dns_names"},
		{name: "api_key.url_mask null", order: `"api_key":{"url_mask":null},`, field: "api_key.url_mask"},
		{name: "receipt_id letters", cert: `"receipt_id":"12a",`, field: "certificate.receipt_id"},
		{name: "receipt_id null", cert: `"receipt_id":null,`, field: "certificate.receipt_id"},
		{name: "user_id an object", cert: `"user_id":{},`, field: "certificate.user_id"},
		{name: "certificate id a string", cert: `"id":"7",`, field: "certificate.id"},
		{name: "key_size exponent", cert: `"key_size":2e3,`, field: "certificate.key_size"},
		{name: "dns_names with null", cert: `"dns_names":["a",null],`, field: "certificate.dns_names"},
		{name: "cert_validity.years a string", cert: `"cert_validity":{"years":"1"},`, field: "certificate.cert_validity.years"},
		{name: "ca_cert.id a number", cert: `"ca_cert":{"id":5},`, field: "certificate.ca_cert.id"},
		{name: "NUL in common_name", cert: `"common_name":"a\u0000b",`, field: "certificate.common_name"},
		{name: "NUL in status", order: `"status":"x\u0000",`, field: "status"},
	} {
		_, err := orderdoc.Parse([]byte(doc(tc.order, tc.cert)))
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.field != "" && err == nil:
			t.Errorf("%s: accepted", tc.name)
		case tc.field != "" && !strings.Contains(err.Error(), "OrderId 5: "+tc.field+" must be"):
			t.Errorf("%s: error %q does not name the order and %s", tc.name, err, tc.field)
		}
	}
}

func TestParseSize(t *testing.T) {
	pad := strings.Repeat("x", certorder.MaxOrderBytes)
	_, err := orderdoc.Parse([]byte(`{"OrderId":5,"certificate":{"valid_till":"2030-01-01","csr":"` + pad + `"}}`))
	if err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("a document over %d bytes: %v", certorder.MaxOrderBytes, err)
	}
}

// Whatever the import accepts, client.Order (the Go client's and the web
// page's reading) decodes: random documents in every variation the
// schema allows.
func TestAcceptedDocumentsDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		doc := ordertest.RandomDocument(r, int64(i+1))
		o, err := orderdoc.Parse(doc)
		if err != nil {
			t.Fatalf("a random document of the schema is refused: %v\n%s", err, doc)
		}
		var info client.Order
		if err := json.Unmarshal(wire.AppendOrderInfo(nil, o, time.Now()), &info); err != nil || info.OrderID != o.ID {
			t.Fatalf("an accepted document does not decode: %v\n%s", err, doc)
		}
	}
}
