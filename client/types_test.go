package client_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/certorder/certorder/client"
)

func load(t *testing.T, name string) *client.Order {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var o client.Order
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &o
}

func num(v int64) client.Int { return client.Int{Value: v, Valid: true} }

func TestDecodeFull(t *testing.T) {
	t.Parallel()
	o := load(t, "order_full.json")
	c := o.Certificate
	checks := []struct {
		name      string
		got, want any
	}{
		{"OrderId", o.OrderID, int64(1001)},
		{"is_renewed", o.IsRenewed, true},
		{"was_renewed_by_order_id", o.WasRenewedByOrderID, num(1002)},
		{"purchased_wildcard_names null", o.PurchasedWildcardNames, client.Int{}},
		{"purchased_dns_names", o.PurchasedDNSNames, num(2)},
		{"user_id as a number", c.UserID, client.String("31337")},
		{"receipt_id as a string", c.ReceiptID, num(8800123)},
		{"certificate purchased_dns_names as a string", c.PurchasedDNSNames, num(2)},
		{"certificate purchased_wildcard_names as a string", c.PurchasedWildcardNames, num(0)},
		{"dns_names", []string(c.DNSNames), []string{"old.example.com", "www.old.example.com"}},
		{"days_remaining", c.DaysRemaining, num(-2206)},
		{"date_created with +09:00", c.DateCreated.Time.UTC(), time.Date(2019, 1, 2, 1, 11, 12, 0, time.UTC)},
		{"date_created raw", c.DateCreated.Raw, "2019-01-02T10:11:12+09:00"},
		{"valid_till as a date", c.ValidTill.Time, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"cert_validity", *c.CertValidity, client.CertValidity{Years: num(1), Days: num(363),
			CustomExpirationDate: client.Time{Time: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), Raw: "2020-01-01"}}},
		{"profile_option", *c.ProfileOption, "custom_profile"},
		{"url_mask", *o.APIKey.URLMask, "https://acme.example.com/*"},
		{"ca_cert", c.CACert, client.CACert{ID: "5D10C6E0F0A4", Name: "DigiCert Global G2 TLS RSA SHA256 2020 CA1"}},
		{"product", o.Product, client.Product{NameID: "ssl_plus", Name: "Standard SSL", Type: "ssl_certificate", CSRRequired: true}},
		{"key_size", c.KeySize, num(2048)},
		{"order_valid_till", o.OrderValidTill.Raw, "2020-01-01"},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %#v, want %#v", tc.name, tc.got, tc.want)
		}
	}
}

func TestDecodeMinimal(t *testing.T) {
	t.Parallel()
	o := load(t, "order_minimal.json")
	c := o.Certificate
	if o.IsRenewed || o.WasRenewedByOrderID.Valid {
		t.Error("minimal order looks renewed")
	}
	if c.CertValidity != nil || c.ProfileOption != nil || o.APIKey.URLMask != nil {
		t.Error("absent optional fields decoded as present")
	}
	if c.ID != num(9003) || c.DaysRemaining != num(410) || c.UserID != "31337" || c.ReceiptID != num(8800125) {
		t.Errorf("certificate = %+v", c)
	}
	if len(c.DNSNames) != 0 || !o.DateCreated.IsZero() || o.DateCreated.Raw != "" {
		t.Errorf("absent fields not zero: %+v", o)
	}
}

func TestDecodeOdd(t *testing.T) {
	t.Parallel()
	o := load(t, "order_odd.json")
	c := o.Certificate
	if want := []string{"odd.example.com", "www.odd.example.com"}; !reflect.DeepEqual([]string(c.DNSNames), want) {
		t.Errorf("dns_names as a string = %q", c.DNSNames)
	}
	// A date in an unknown form keeps its text and does not fail the answer.
	if c.ValidTill.Raw != "01/03/2027" || !c.ValidTill.IsZero() {
		t.Errorf("valid_till = %#v", c.ValidTill)
	}
	if o.DateCreated.Time.UTC() != time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC) {
		t.Errorf("date_created with a space = %v", o.DateCreated.Time)
	}
	if c.DateIssued.Raw != "" || c.PurchasedDNSNames.Valid || c.CertValidity.Days != num(90) || c.CertValidity.Years.Valid {
		t.Errorf("certificate = %+v", c)
	}
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"OrderId": 1, "certificate": {"receipt_id": "12a"}}`,
		`{"OrderId": 1, "certificate": {"receipt_id": true}}`,
		`{"OrderId": 1, "certificate": {"user_id": {}}}`,
		`{"OrderId": 1, "certificate": {"dns_names": 5}}`,
		`{"OrderId": 1, "date_created": 20260101}`,
	} {
		var o client.Order
		if err := json.Unmarshal([]byte(doc), &o); err == nil {
			t.Errorf("accepted %s", doc)
		}
	}
}

// Int and Time write back what they read.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	o := load(t, "order_full.json")
	b, err := json.Marshal(struct {
		A client.Int  `json:"a"`
		B client.Int  `json:"b"`
		C client.Time `json:"c"`
	}{o.Certificate.ReceiptID, o.PurchasedWildcardNames, o.DateCreated})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"a":8800123,"b":null,"c":"2019-01-02T10:11:12+09:00"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
