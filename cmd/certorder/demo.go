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
	"github.com/certorder/certorder/internal/storekit"
)

// demoMember is the member serve --demo creates.
const demoMember = "demo"

// seedDemo adds the demo member, its orders (a renewal chain 10001 -> 10002
// -> 10003, and 10004 with the spec's quirky types) and a fresh key, then
// prints the credentials and a curl command for each action. It runs every
// time, so the printed key always works; earlier demo keys are revoked.
// demoStore is what serve --demo writes to.
type demoStore interface {
	storekit.MemberStore
	storekit.KeyStore
	storekit.OrderStore
}

func (e *env) seedDemo(ctx context.Context, store demoStore, base, endpoint, db string) error {
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
	for _, file := range demoOrders(time.Now()) {
		if _, err := store.ImportOrders(ctx, demoMember, importfile.Decode(bytes.NewReader(file))); err != nil {
			return err
		}
	}

	body := func(action, extra string) string {
		return fmt.Sprintf(`{"AccessName":"%s","AccessKey":"%s","action":"%s"%s}`, demoMember, text, action, extra)
	}
	fmt.Fprintf(e.stdout, `Demo data is in %s: member %q with orders 10001, 10002, 10003 (a renewal chain; 10003 a
three-year plan with a reissued certificate) and 10004 (a certificate due for reissue).

AccessName: %s
AccessKey:  %s

Try:
  curl -s -X POST %s -H 'Content-Type: application/json' -d '%s'
  curl -s -X POST %s -H 'Content-Type: application/json' -d '%s'
  curl -s -X POST %s -H 'Content-Type: application/json' -d '%s'
  curl -s -X POST %s -H 'Content-Type: application/json' -d '%s'
(the last: which order a certificate belongs to, by the serial of 10003's current certificate)

The member web page is at %s (sign in with the credentials above).

`, db, demoMember, demoMember, text,
		endpoint, body("Auth", ""),
		endpoint, body("OrderInfo", `,"orderId":10003`),
		endpoint, body("RenewCheck", `,"orderId":10001`),
		endpoint, body("CertificateCheck", `,"serial_number":"`+demoSerial(demoCurrentCert)+`"`),
		base)
	return nil
}

// demoCurrentCert is the certificate ID of order 10003's current
// certificate, whose serial the banner's CertificateCheck asks about.
const demoCurrentCert = 530003

// demoSerial is the serial number of a demo certificate: hexadecimal, as
// DigiCert writes it, with a leading zero.
func demoSerial(certID int) string { return fmt.Sprintf("0%X", certID*104729) }

// demoOrders are the import files of the demo's orders with dates
// relative to now, so that the demo shows expired, expiring and current
// certificates, one-year and multi-year plans, and a certificate history:
// the first file holds order 10003 with its first 199-day certificate of a
// three-year plan, the second every order, 10003 reissued five days ago.
func demoOrders(now time.Time) [][]byte {
	day := func(d int) string { return now.AddDate(0, 0, d).UTC().Format(certorder.DateLayout) }
	stamp := func(d int) string { return now.AddDate(0, 0, d).UTC().Format("2006-01-02T15:04:05+00:00") }
	// A plan of years from planFrom; the certificate certID valid from
	// certFrom to certTill (days from now).
	type plan struct {
		from, years int
	}
	order := func(id, certID int, cn, status, certStatus string, p plan, certFrom, certTill int, renewal, quirks, wildcards string) string {
		planTill := now.AddDate(0, 0, p.from).AddDate(p.years, 0, 0).UTC().Format(certorder.DateLayout)
		return fmt.Sprintf(`{
  "OrderId": %d,
  "certificate": {
    "id": %d, "thumbprint": "%040X", "serial_number": "%s",
    "common_name": "%s", "dns_names": ["%s", "www.%s"],
    "status": "%s", "date_created": "%s", "date_issued": "%s",
    "valid_from": "%s", "valid_till": "%s",
    "cert_validity": {"days": %d},
    "csr": "-----BEGIN CERTIFICATE REQUEST-----\nMIIBdemo\n-----END CERTIFICATE REQUEST-----",
    "is_rsassa_pss": false, "signature_hash": "sha256", "key_size": 2048,
    "ca_cert": {"id": "A1B2C3", "name": "DigiCert Global G2 TLS RSA SHA256 2020 CA1"},
    %s
  },
  "status": "%s",%s
  "date_created": "%s", "date_issued": "%s", "validity_years": %d,
  "order_valid_from": "%s", "order_valid_till": "%s",
  "product": {"name_id": "ssl_basic", "name": "Basic OV", "type": "ssl_certificate", "csr_required": true},
  "purchased_dns_names": 1, "purchased_wildcard_names": %s,
  "api_key": {"name": "acme-automation", "key_type": "acme"}
}`, id, certID, certID*7919, demoSerial(certID), cn, cn, cn, certStatus, stamp(certFrom-1), stamp(certFrom), day(certFrom), day(certTill),
			certTill-certFrom, quirks, status, renewal, stamp(p.from-1), stamp(certFrom), p.years, day(p.from), planTill, wildcards)
	}
	quirks := func(receipt int) string {
		return fmt.Sprintf(`"user_id": "7001", "receipt_id": %d, "purchased_dns_names": 1, "purchased_wildcard_names": 0`, receipt)
	}
	orders := []string{
		// One-year plans of the 397-day era: 10001 expired, renewed by
		// 10002, which ends in 10 days and was renewed by 10003.
		order(10001, 510001, "shop.example.com", "issued", "expired", plan{-385, 1}, -385, -20,
			` "is_renewed": true, "was_renewed_by_order_id": 10002,`, quirks(880001), "0"),
		order(10002, 510002, "shop.example.com", "issued", "issued", plan{-355, 1}, -355, 10,
			` "is_renewed": true, "was_renewed_by_order_id": 10003,`, quirks(880002), "0"),
		// A three-year plan, reissued.
		order(10003, demoCurrentCert, "shop.example.com", "issued", "issued", plan{-200, 3}, -5, 194, "", quirks(880003), "0"),
		// The types the spec says may vary: user_id a number, receipt_id and
		// the purchased counts strings of digits, the order's wildcard count
		// null, profile_option present. A two-year plan whose certificate
		// is due for reissue.
		order(10004, 510004, "mail.example.org", "issued", "issued", plan{-180, 2}, -180, 19, "",
			`"profile_option": "some_ssl_profile", "user_id": 7002, "receipt_id": "880004", "purchased_dns_names": "2", "purchased_wildcard_names": "0"`, "null"),
	}
	first := order(10003, 520003, "shop.example.com", "issued", "issued", plan{-200, 3}, -200, -1, "", quirks(880003), "0")
	return [][]byte{[]byte(first), []byte("[" + strings.Join(orders, ",\n") + "]\n")}
}
