package digicert_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/orderdoc"
)

// specPaths is every member the spec's order object has (sections
// 2.2-2.5); nothing else may reach a member.
var specPaths = map[string]bool{
	"OrderId": true, "certificate": true, "status": true, "is_renewed": true,
	"was_renewed_by_order_id": true, "date_created": true, "date_issued": true,
	"validity_years": true, "order_valid_from": true, "order_valid_till": true,
	"product": true, "purchased_dns_names": true, "purchased_wildcard_names": true, "api_key": true,
	"certificate.id": true, "certificate.thumbprint": true, "certificate.serial_number": true,
	"certificate.common_name": true, "certificate.dns_names": true, "certificate.status": true,
	"certificate.date_created": true, "certificate.date_issued": true, "certificate.valid_from": true,
	"certificate.valid_till": true, "certificate.days_remaining": true, "certificate.cert_validity": true,
	"certificate.cert_validity.years": true, "certificate.cert_validity.days": true,
	"certificate.cert_validity.custom_expiration_date": true, "certificate.csr": true,
	"certificate.is_rsassa_pss": true, "certificate.signature_hash": true,
	"certificate.profile_option": true, "certificate.key_size": true, "certificate.ca_cert": true,
	"certificate.ca_cert.id": true, "certificate.ca_cert.name": true, "certificate.user_id": true,
	"certificate.receipt_id": true, "certificate.purchased_dns_names": true,
	"certificate.purchased_wildcard_names": true,
	"product.name_id":                      true, "product.name": true, "product.type": true, "product.csr_required": true,
	"api_key.name": true, "api_key.key_type": true, "api_key.url_mask": true,
}

// outsideSpec returns the member paths of doc that the spec does not have.
func outsideSpec(t *testing.T, doc []byte) []string {
	t.Helper()
	var top map[string]any
	if err := json.Unmarshal(doc, &top); err != nil {
		t.Fatalf("output is not a JSON object: %v\n%s", err, doc)
	}
	var bad []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := prefix + k
			if !specPaths[path] {
				bad = append(bad, path)
			}
			if sub, ok := v.(map[string]any); ok {
				walk(path+".", sub)
			}
		}
	}
	walk("", top)
	slices.Sort(bad)
	return bad
}

// personal is data in the fixtures that must never reach a member.
var personal = []string{
	"Rosalind", "Franklin", "Alan", "Turing", "Barbara", "Liskov", "@fixture.example", "+44 20",
	"Fixture Trading", "Retail Division", "Springfield", "Phone Rosalind", "CISO", "Web Operations",
	"inventory automation@", "validation_description", "Normal Organization Validation",
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit returns the fixture with changes applied to its decoded form.
func edit(t *testing.T, name string, change func(top, cert map[string]any)) []byte {
	t.Helper()
	var top map[string]any
	if err := json.Unmarshal(fixture(t, name), &top); err != nil {
		t.Fatal(err)
	}
	change(top, top["certificate"].(map[string]any))
	b, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const wantIssued = `{"OrderId":4410021,"certificate":{"id":8830077,` +
	`"thumbprint":"2F6B3C9D0E1A4B7C8D9E0F1A2B3C4D5E6F7A8B9C","serial_number":"0B7E2C91D4A35F6E8B0C1D2E3F405162",` +
	`"common_name":"shop.example.org","dns_names":["shop.example.org","www.shop.example.org"],` +
	`"date_created":"2025-03-04T09:15:27+00:00","date_issued":"2025-03-04T11:02:45+00:00",` +
	`"valid_from":"2025-03-04","valid_till":"2026-03-05","cert_validity":{"years":1},` +
	`"csr":"-----BEGIN CERTIFICATE REQUEST-----\nMIICfixture\n-----END CERTIFICATE REQUEST-----",` +
	`"signature_hash":"sha256","key_size":2048,` +
	`"ca_cert":{"id":"E5F6A7B8C9","name":"DigiCert Global G2 TLS RSA SHA256 2020 CA1"},` +
	`"user_id":52006,"receipt_id":771204,"purchased_dns_names":2,"purchased_wildcard_names":0},` +
	`"status":"issued","is_renewed":true,"was_renewed_by_order_id":4410588,` +
	`"date_created":"2025-03-04T09:15:27+00:00","date_issued":"2025-03-04T11:02:45+00:00",` +
	`"validity_years":1,"order_valid_from":"2025-03-04","order_valid_till":"2026-03-05",` +
	`"product":{"name_id":"ssl_plus","name":"Standard SSL","type":"ssl_certificate","csr_required":true},` +
	`"purchased_dns_names":2,"purchased_wildcard_names":0,` +
	`"api_key":{"name":"inventory automation","key_type":"api_key"}}`

func TestSpecOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     []byte
		want    string   // the whole output, when given
		has     []string // fragments the output must have
		hasNot  []string // fragments it must not have
		wantErr error    // nil: must map
	}{
		{name: "documented issued order", raw: fixture(t, "order_info_issued.json"), want: wantIssued},
		// Nothing invented for an order not issued: no certificate dates, no
		// days_remaining, no validity; what CertCentral gives is kept.
		{name: "not issued: needs_approval example", raw: fixture(t, "order_info_needs_approval.json"),
			has: []string{`"status":"needs_approval"`, `"common_name":"example.com"`, `"dns_names":["example2.com","example3.com"]`,
				`"date_created":"2025-11-20T20:05:28+00:00"`, `"csr":"<csr>"`, `"key_size":2048`, `"is_renewed":false`},
			hasNot: []string{"valid_till", "valid_from", "days_remaining", "date_issued", "serial_number", "thumbprint",
				"cert_validity", `""`, "0000-", "organization"}},
		{name: "pending renewal without a certificate object at all",
			raw: edit(t, "order_info_needs_approval.json", func(top, _ map[string]any) {
				delete(top, "certificate")
				top["status"] = "pending"
			}),
			has: []string{`"certificate":{}`, `"status":"pending"`}},
		{name: "a status not known yet is kept as written",
			raw: edit(t, "order_info_needs_approval.json", func(top, _ map[string]any) { top["status"] = "awaiting_dcv_2027" }),
			has: []string{`"status":"awaiting_dcv_2027"`}},
		{name: "issued without valid_till is refused", wantErr: digicert.ErrUnmappable,
			raw: edit(t, "order_info_issued.json", func(_, cert map[string]any) { delete(cert, "valid_till") })},
		{name: "not renewed: renewed_order_id 0",
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) {
				top["is_renewed"], top["renewed_order_id"] = false, 0
			}),
			has: []string{`"is_renewed":false`}, hasNot: []string{"was_renewed_by_order_id"}},
		{name: "renewal without is_renewed still links",
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) { delete(top, "is_renewed") }),
			has: []string{`"is_renewed":true,"was_renewed_by_order_id":4410588`}},
		{name: "is_renewed without an order", wantErr: digicert.ErrUnmappable,
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) { top["renewed_order_id"] = 0 })},
		{name: "renewed by itself", wantErr: digicert.ErrUnmappable,
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) { top["renewed_order_id"] = 4410021 })},
		{name: "values keep the type CertCentral sent",
			raw: edit(t, "order_info_issued.json", func(top, cert map[string]any) {
				cert["user_id"] = "52006"
				top["receipt_id"] = "771204"
				top["purchased_wildcard_names"] = nil
				cert["profile_option"] = "some_ssl_profile"
				cert["is_rsassa_pss"] = false
				cert["status"] = "expired"
			}),
			has: []string{`"user_id":"52006"`, `"receipt_id":"771204"`, `"purchased_wildcard_names":null`,
				`"profile_option":"some_ssl_profile"`, `"is_rsassa_pss":false`, `"status":"expired"`}},
		{name: "status exactly as written",
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) { top["status"] = "waiting_pickup" }),
			has: []string{`"status":"waiting_pickup"`}},
		{name: "api_key url_mask kept, other members dropped",
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) {
				top["api_key"] = map[string]any{"name": "acme", "key_type": "acme_url", "url_mask": "https://*.example.org",
					"created_by": "Barbara Liskov"}
			}),
			has:    []string{`"api_key":{"name":"acme","key_type":"acme_url","url_mask":"https://*.example.org"}`},
			hasNot: []string{"created_by"}},
		{name: "cert_validity members that appear, and only them",
			raw: edit(t, "order_info_issued.json", func(_, cert map[string]any) {
				cert["cert_validity"] = map[string]any{"days": 199, "custom_expiration_date": "2026-01-01", "note": "x"}
			}),
			has: []string{`"cert_validity":{"days":199,"custom_expiration_date":"2026-01-01"}`}},
		{name: "fields absent upstream are omitted",
			raw: edit(t, "order_info_issued.json", func(top, cert map[string]any) {
				for _, k := range []string{"api_key", "order_valid_from", "order_valid_till", "validity_years",
					"receipt_id", "user", "purchased_dns_names", "purchased_wildcard_names", "product"} {
					delete(top, k)
				}
				for _, k := range []string{"ca_cert", "csr", "cert_validity", "thumbprint"} {
					delete(cert, k)
				}
			}),
			hasNot: []string{"api_key", "order_valid", "validity_years", "receipt_id", "user_id", "purchased",
				"product", "ca_cert", "csr", "cert_validity", "thumbprint"}},
		{name: "valid_till not a date", wantErr: digicert.ErrUnmappable,
			raw: edit(t, "order_info_issued.json", func(_, cert map[string]any) { cert["valid_till"] = "05/03/2026" })},
		{name: "date_created without offset", wantErr: digicert.ErrUnmappable,
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) { top["date_created"] = "2025-03-04 09:15:27" })},
		{name: "no status", wantErr: digicert.ErrUnmappable,
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) { delete(top, "status") })},
		{name: "dns_names not strings", wantErr: digicert.ErrUnmappable,
			raw: edit(t, "order_info_issued.json", func(_, cert map[string]any) { cert["dns_names"] = []any{1, 2} })},
		{name: "purchased count negative", wantErr: digicert.ErrUnmappable,
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) { top["purchased_dns_names"] = -1 })},
		{name: "certificate not an object", wantErr: digicert.ErrUnmappable,
			raw: edit(t, "order_info_issued.json", func(top, _ map[string]any) { top["certificate"] = "x" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// SpecOrder reads only Raw; ParseOrder would refuse some of the
			// malformed answers before SpecOrder sees them.
			got, err := digicert.SpecOrder(&digicert.Order{Raw: tt.raw})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, digicert.ErrUnmappable) {
					t.Fatalf("err = %v, want %v (and ErrUnmappable); output %s", err, tt.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("SpecOrder: %v", err)
			}
			if tt.want != "" && string(got) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			for _, frag := range tt.has {
				if !bytes.Contains(got, []byte(frag)) {
					t.Errorf("output lacks %s:\n%s", frag, got)
				}
			}
			for _, frag := range tt.hasNot {
				if bytes.Contains(got, []byte(frag)) {
					t.Errorf("output has %s:\n%s", frag, got)
				}
			}
			checkMemberSafe(t, got)
		})
	}
}

// checkMemberSafe checks what every mapped order must satisfy: only the
// spec's members, no personal data, and certorder's import accepts it.
func checkMemberSafe(t *testing.T, got []byte) {
	t.Helper()
	if bad := outsideSpec(t, got); len(bad) > 0 {
		t.Errorf("members outside the spec: %v\n%s", bad, got)
	}
	for _, p := range personal {
		if bytes.Contains(got, []byte(p)) {
			t.Errorf("personal or internal data %q reached the output:\n%s", p, got)
		}
	}
	if _, err := orderdoc.Parse(got); err != nil {
		t.Errorf("certorder refuses the mapped order: %v\n%s", err, got)
	}
}

func TestSpecOrderRejectsNothingToMap(t *testing.T) {
	t.Parallel()
	for _, o := range []*digicert.Order{nil, {}, {Raw: []byte(`[1]`)}, {Raw: []byte(`{"id":0,"certificate":{}}`)}} {
		if _, err := digicert.SpecOrder(o); !errors.Is(err, digicert.ErrUnmappable) {
			t.Errorf("SpecOrder(%v) err = %v, want ErrUnmappable", o, err)
		}
	}
}

// TestSpecOrderSimulatedDataset maps every order of a generated dataset:
// orders of every status map and are member-safe, pending ones without
// certificate dates, and the renewal relation matches the simulator's.
func TestSpecOrderSimulatedDataset(t *testing.T) {
	t.Parallel()
	sim := digicerttest.NewServer(digicerttest.Options{APIKey: "k",
		Clock: digicerttest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))})
	g, err := sim.Generate(400, 7)
	if err != nil {
		t.Fatal(err)
	}
	mapped, notIssued := 0, 0
	for _, id := range sim.OrderIDs() {
		raw, ok := sim.OrderInfo(id)
		if !ok {
			t.Fatalf("order %d vanished", id)
		}
		o, err := digicert.ParseOrder(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := digicert.SpecOrder(o)
		if err != nil {
			t.Fatalf("order %d: %v", id, err)
		}
		mapped++
		if !bytes.Contains(got, []byte(`"valid_till"`)) {
			notIssued++
			if bytes.Contains(got, []byte(`"status":"issued"`)) || bytes.Contains(got, []byte(`"valid_from"`)) {
				t.Errorf("order %d: issued, or certificate dates, without valid_till: %s", id, got)
			}
		}
		checkMemberSafe(t, got)
		for _, p := range []string{"Lovelace", "Hopper", "Torvalds", "Hamilton", "Thompson", "@example.net",
			"+1 801", "Example Holdings", "Division", "Security Officer", "Requested by", "Call "} {
			if bytes.Contains(got, []byte(p)) {
				t.Fatalf("order %d: %q reached the output: %s", id, p, got)
			}
		}
		parsed, err := orderdoc.Parse(got)
		if err != nil {
			t.Fatal(err)
		}
		if parsed.RenewedBy != sim.RenewedBy(id) {
			t.Errorf("order %d: renewed by %d, simulator says %d", id, parsed.RenewedBy, sim.RenewedBy(id))
		}
	}
	if notIssued != g.Pending || mapped != g.Orders {
		t.Errorf("mapped %d, not issued %d; generated %+v", mapped, notIssued, g)
	}
	if g.Renewals == 0 || g.CrossContainer == 0 {
		t.Errorf("the dataset has no renewal chains across divisions: %+v", g)
	}
	if !strings.Contains(string(mustInfo(t, sim, sim.OrderIDs()[0])), "organization_contact") {
		t.Error("the simulator's Order info lacks the contacts the mapping must drop")
	}
}

func mustInfo(t *testing.T, sim *digicerttest.Server, id int64) []byte {
	t.Helper()
	raw, ok := sim.OrderInfo(id)
	if !ok {
		t.Fatalf("no order %d", id)
	}
	return raw
}
