package certorder_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/ordertest"
	"github.com/certorder/certorder/wire"
)

func TestDaysRemaining(t *testing.T) {
	now := time.Date(2026, 3, 10, 23, 59, 0, 0, time.FixedZone("JST", 9*3600)) // 14:59 UTC
	for _, tc := range []struct {
		till string
		want int
	}{
		{"2026-03-10", 0},
		{"2026-03-11", 1},
		{"2026-03-09", -1},
		{"2027-03-10", 365},
		{"2024-02-29", -740},
	} {
		if got := certorder.DaysRemaining(tc.till, now); got != tc.want {
			t.Errorf("DaysRemaining(%s) = %d, want %d", tc.till, got, tc.want)
		}
	}
}

// An order whose status says it is not issued yet (any status but issued,
// revoked and expired, known or not) needs no certificate dates.
func TestParseOrderNotIssued(t *testing.T) {
	for _, status := range []string{"pending", "needs_approval", "processing", "waiting_pickup", "reissue_pending",
		"rejected", "canceled", "a_status_not_known_yet"} {
		o, err := certorder.ParseOrder([]byte(`{"OrderId":5,"status":"` + status + `","certificate":{"common_name":"a.example"}}`))
		if err != nil || o.ValidTill != "" || o.Status != status {
			t.Errorf("%s: %+v, %v", status, o, err)
		}
	}
	// The two questions ignore case, and take the British spelling too.
	for status, ended := range map[string]bool{"canceled": true, "Canceled": true, "CANCELLED": true, "rejected": true,
		"Rejected": true, "pending": false, "issued": false} {
		if certorder.OrderEnded(status) != ended {
			t.Errorf("OrderEnded(%q) = %v", status, !ended)
		}
	}
	if _, err := certorder.ParseOrder([]byte(`{"OrderId":5,"status":"Issued","certificate":{}}`)); err == nil {
		t.Error(`status "Issued" without valid_till was accepted`)
	}
	_, err := certorder.ParseOrder([]byte(`{"OrderId":5,"status":"issued","certificate":{}}`))
	if err == nil || !strings.Contains(err.Error(), "OrderId 5") || !strings.Contains(err.Error(), "certificate.valid_till") {
		t.Errorf("issued without valid_till: %v", err)
	}
}

func TestParseOrderRefuses(t *testing.T) {
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
		"pending, null till": `{"OrderId":5,"status":"pending","certificate":{"valid_till":null}}`,
		"pending, '' till":   `{"OrderId":5,"status":"pending","certificate":{"valid_till":""}}`,
		"bad valid_till":     `{"OrderId":5,"certificate":{"valid_till":"01/01/2030"}}`,
		"dns_names a string": `{"OrderId":5,"certificate":{"valid_till":"2030-01-01","dns_names":"a.example"}}`,
		"duplicate field":    `{"OrderId":5,"OrderId":6,"certificate":{"valid_till":"2030-01-01"}}`,
		"renewed, no order":  `{"OrderId":5,"is_renewed":true,"certificate":{"valid_till":"2030-01-01"}}`,
		"order, not renewed": `{"OrderId":5,"is_renewed":false,"was_renewed_by_order_id":6,"certificate":{"valid_till":"2030-01-01"}}`,
		"renews itself":      `{"OrderId":5,"is_renewed":true,"was_renewed_by_order_id":5,"certificate":{"valid_till":"2030-01-01"}}`,
		"status a number":    `{"OrderId":5,"status":1,"certificate":{"valid_till":"2030-01-01"}}`,
		"trailing data":      `{"OrderId":5,"certificate":{"valid_till":"2030-01-01"}} x`,
		// encoding/json would read these as the spec's fields, unchecked.
		"product, other case":    `{"OrderId":5,"produCt":0,"certificate":{"valid_till":"2030-01-01"}}`,
		"valid_till, other case": `{"OrderId":5,"status":"pending","certificate":{"Valid_Till":"someday"}}`,
		"name_id, other case":    `{"OrderId":5,"product":{"Name_ID":1},"certificate":{"valid_till":"2030-01-01"}}`,
		"OrderId, other case":    `{"OrderId":5,"orderid":"x","certificate":{"valid_till":"2030-01-01"}}`,
	} {
		if _, err := certorder.ParseOrder([]byte(doc)); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
}

// Every field the spec types is checked at import, in exactly the
// variations the spec allows; the message names the order and the field.
func TestParseOrderTypes(t *testing.T) {
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
		_, err := certorder.ParseOrder([]byte(doc(tc.order, tc.cert)))
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

func TestParseOrderSize(t *testing.T) {
	pad := strings.Repeat("x", certorder.MaxOrderBytes)
	_, err := certorder.ParseOrder([]byte(`{"OrderId":5,"certificate":{"valid_till":"2030-01-01","csr":"` + pad + `"}}`))
	if err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("a document over %d bytes: %v", certorder.MaxOrderBytes, err)
	}
}

func TestRedactKeys(t *testing.T) {
	key, _, _ := certorder.NewKey("")
	id, _ := certorder.KeyID(key)
	for in, want := range map[string]string{
		"acme-corp":       "acme-corp",
		key:               "cok_" + id + "_[redacted]",
		"x " + key + " y": "x cok_" + id + "_[redacted] y",
		"COK_abcdef":      "cok_[redacted]",
		"cok_":            "cok_[redacted]",
		"Auth":            "Auth",
	} {
		if got := certorder.RedactKeys(in); got != want {
			t.Errorf("RedactKeys(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeys(t *testing.T) {
	text, k, err := certorder.NewKey("x")
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := certorder.NewKey("x")
	if id, ok := certorder.KeyID(text); !ok || id != k.ID || text == other {
		t.Fatalf("KeyID(%s) = %s, %v; key ID %s", text, id, ok, k.ID)
	}
	if strings.Contains(string(k.Hash), text) || len(k.Hash) != 32 {
		t.Fatal("key hash is not a SHA-256")
	}
	for _, bad := range []string{"", "cok_", "cok_abc_def", "xyz_0123456789ab_secret", "cok_0123456789ab_", "cok_0123456789aG_x", "cok_01234567\x0089a_x"} {
		if _, ok := certorder.KeyID(bad); ok {
			t.Errorf("KeyID(%q) accepted", bad)
		}
	}
}

func TestAuditEntryTrimmed(t *testing.T) {
	e := certorder.AuditEntry{Member: strings.Repeat("é", 40), Action: "a\x00b\xffc"}.Trimmed()
	if len(e.Member) != 64 || !utf8.ValidString(e.Member) || e.Action != "a\uFFFDb\uFFFDc" {
		t.Fatalf("Trimmed = %q, %q", e.Member, e.Action)
	}
}

// Whatever the import accepts, the typed OrderInfo (the Go client's Order,
// the web page's reading) decodes: random documents in every variation the
// schema allows.
func TestAcceptedDocumentsDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		doc := ordertest.RandomDocument(r, int64(i+1))
		o, err := certorder.ParseOrder(doc)
		if err != nil {
			t.Fatalf("a random document of the schema is refused: %v\n%s", err, doc)
		}
		var info certorder.OrderInfo
		if err := json.Unmarshal(wire.AppendOrderInfo(nil, o, time.Now()), &info); err != nil || info.OrderID != o.ID {
			t.Fatalf("an accepted document does not decode: %v\n%s", err, doc)
		}
	}
}

// DaysRemaining's reading of a date agrees with time.Parse's, across the
// whole range of years, exactly (in Unix seconds, not a time.Duration,
// whose ±106751 days it was once clamped to).
func TestDaysRemainingFast(t *testing.T) {
	slow := func(validTill string, now time.Time) int {
		till, err := time.Parse(certorder.DateLayout, validTill)
		if err != nil {
			return 0
		}
		y, m, d := now.UTC().Date()
		return int((till.Unix() - time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()) / 86400)
	}
	r := rand.New(rand.NewPCG(3, 4))
	nows := []time.Time{time.Date(2026, 3, 10, 23, 59, 0, 0, time.FixedZone("JST", 9*3600)), time.Unix(0, 0),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC)}
	for i := range 200000 {
		s := fmt.Sprintf("%04d-%02d-%02d", r.IntN(10000), r.IntN(14), r.IntN(33))
		if i%2 == 0 {
			s = time.Unix(r.Int64N(4e11)-2e11, 0).UTC().Format(certorder.DateLayout)
		}
		now := nows[i%len(nows)]
		if i%3 == 0 {
			now = time.Unix(r.Int64N(4e9), 0)
		}
		if got, want := certorder.DaysRemaining(s, now), slow(s, now); got != want {
			t.Fatalf("DaysRemaining(%q, %v) = %d, time.Parse says %d", s, now, got, want)
		}
	}
	for _, s := range []string{"", "2026-1-01", "2026-02-29", "2024-02-29", "0000-01-01", "9999-12-31", "2026-13-01", "2026/01/01", "+026-01-01"} {
		if got, want := certorder.DaysRemaining(s, nows[0]), slow(s, nows[0]); got != want {
			t.Fatalf("DaysRemaining(%q) = %d, want %d", s, got, want)
		}
	}
}
