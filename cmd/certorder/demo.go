package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/importfile"
)

// demoMember is the member serve --demo creates.
const demoMember = "demo"

// seedDemo adds the demo member, its orders (a renewal chain 10001 -> 10002
// -> 10003, and 10004 with the spec's quirky types) and a fresh key, then
// prints the credentials and a curl command for each action. It runs every
// time, so the printed key always works; earlier demo keys are revoked.
func (e *env) seedDemo(ctx context.Context, store certorder.Store, base, endpoint, db string) error {
	if _, err := store.AddMember(ctx, demoMember); err != nil && !errors.Is(err, certorder.ErrConflict) {
		return err
	}
	if err := store.SetMemberDisabled(ctx, demoMember, false); err != nil {
		return err
	}
	keys, err := store.Keys(ctx, demoMember)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Label == "demo" && !k.Revoked() {
			if err := store.RevokeKey(ctx, k.ID); err != nil {
				return err
			}
		}
	}
	text, key, err := certorder.NewKey("demo")
	if err != nil {
		return err
	}
	if err := store.AddKey(ctx, demoMember, key); err != nil {
		return err
	}
	if _, err := store.ImportOrders(ctx, demoMember, importfile.Decode(bytes.NewReader(demoOrders(time.Now())))); err != nil {
		return err
	}

	body := func(action, extra string) string {
		return fmt.Sprintf(`{"AccessName":"%s","AccessKey":"%s","action":"%s"%s}`, demoMember, text, action, extra)
	}
	fmt.Fprintf(e.stdout, `Demo data is in %s: member %q with orders 10001, 10002, 10003 (a renewal chain) and 10004.

AccessName: %s
AccessKey:  %s

Try:
  curl -s -X POST %s -H 'Content-Type: application/json' -d '%s'
  curl -s -X POST %s -H 'Content-Type: application/json' -d '%s'
  curl -s -X POST %s -H 'Content-Type: application/json' -d '%s'

The member web page is at %s (sign in with the credentials above).

`, db, demoMember, demoMember, text,
		endpoint, body("Auth", ""),
		endpoint, body("OrderInfo", `,"orderId":10003`),
		endpoint, body("RenewCheck", `,"orderId":10001`),
		base)
	return nil
}

// demoOrders is an import file of four orders with dates relative to now,
// so that the demo shows expired, expiring and current certificates.
func demoOrders(now time.Time) []byte {
	day := func(d int) string { return now.AddDate(0, 0, d).UTC().Format(certorder.DateLayout) }
	stamp := func(d int) string { return now.AddDate(0, 0, d).UTC().Format("2006-01-02T15:04:05+00:00") }
	order := func(id int, cn, status, certStatus string, from, till int, renewal, quirks, wildcards string) string {
		return fmt.Sprintf(`{
  "OrderId": %d,
  "certificate": {
    "id": %d, "thumbprint": "%X", "serial_number": "0%X",
    "common_name": "%s", "dns_names": ["%s", "www.%s"],
    "status": "%s", "date_created": "%s", "date_issued": "%s",
    "valid_from": "%s", "valid_till": "%s",
    "cert_validity": {"years": 1},
    "csr": "-----BEGIN CERTIFICATE REQUEST-----\nMIIBdemo\n-----END CERTIFICATE REQUEST-----",
    "is_rsassa_pss": false, "signature_hash": "sha256", "key_size": 2048,
    "ca_cert": {"id": "A1B2C3", "name": "DigiCert Global G2 TLS RSA SHA256 2020 CA1"},
    %s
  },
  "status": "%s",%s
  "date_created": "%s", "date_issued": "%s", "validity_years": 1,
  "order_valid_from": "%s", "order_valid_till": "%s",
  "product": {"name_id": "ssl_basic", "name": "Basic OV", "type": "ssl_certificate", "csr_required": true},
  "purchased_dns_names": 1, "purchased_wildcard_names": %s,
  "api_key": {"name": "acme-automation", "key_type": "acme"}
}`, id, 500000+id, id*7919, id*104729, cn, cn, cn, certStatus, stamp(from-1), stamp(from), day(from), day(till),
			quirks, status, renewal, stamp(from-1), stamp(from), day(from), day(till), wildcards)
	}
	orders := []string{
		order(10001, "shop.example.com", "issued", "expired", -385, -20,
			` "is_renewed": true, "was_renewed_by_order_id": 10002,`,
			`"user_id": "7001", "receipt_id": 880001, "purchased_dns_names": 1, "purchased_wildcard_names": 0`, "0"),
		order(10002, "shop.example.com", "issued", "issued", -355, 10,
			` "is_renewed": true, "was_renewed_by_order_id": 10003,`,
			`"user_id": "7001", "receipt_id": 880002, "purchased_dns_names": 1, "purchased_wildcard_names": 0`, "0"),
		order(10003, "shop.example.com", "issued", "issued", -5, 360, "",
			`"user_id": "7001", "receipt_id": 880003, "purchased_dns_names": 1, "purchased_wildcard_names": 0`, "0"),
		// The types the spec says may vary: user_id a number, receipt_id and
		// the purchased counts strings of digits, the order's wildcard count
		// null, profile_option present.
		order(10004, "mail.example.org", "issued", "issued", -100, 265, "",
			`"profile_option": "some_ssl_profile", "user_id": 7002, "receipt_id": "880004", "purchased_dns_names": "2", "purchased_wildcard_names": "0"`, "null"),
	}
	return []byte("[" + strings.Join(orders, ",\n") + "]\n")
}
