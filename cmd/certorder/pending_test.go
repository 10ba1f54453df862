package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/testdb"
)

// CertCentral renews an order: the new order is pending, and the member
// sees it after the next sync, before its certificate exists, through
// every door: RenewCheck, OrderInfo (what CertCentral gave, nothing
// invented), `certorder current` and `info`, the web page, and the
// order.renewed webhook at link time. Its issuance upstream reaches members
// after the sync after that, with order.status_changed pending -> issued.
// A renewal canceled upstream ends its chain: `current` exits 7.
func TestPendingRenewalThroughSync(t *testing.T) {
	t.Parallel()
	testdb.Each(t, testPendingRenewalThroughSync)
}

func testPendingRenewalThroughSync(t *testing.T, dsn string) {
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	var orders [2]int64
	for i := range orders {
		id, err := u.sim.AddOrder(digicerttest.OrderSpec{ContainerID: 10001, CommonName: "shop" + strconv.Itoa(i) + ".example.com",
			Created: time.Now().Add(-48 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if err := u.sim.Issue(id, time.Now().Add(-47*time.Hour)); err != nil {
			t.Fatal(err)
		}
		orders[i] = id
	}
	c := syncCLI(t, dsn, u)
	c.ok("admin", "member", "add", "alice")
	c.ok("admin", "member", "link", "alice", "--container", "10001")
	rc := newReceiver(t)
	rc.addEndpoint(c, "alice", "--events", "order.renewed,order.status_changed")
	if first, _ := c.sync(); !strings.HasPrefix(first, "sync ok (full") || count(t, first, "new") != 2 {
		t.Fatalf("first sync: %s", first)
	}
	endpoint, _ := startServe(t, c, "--rate-limit", "0", "--ip-rate-limit", "0", "--webhook-allow-private")
	key := lastLine(c.ok("admin", "key", "create", "alice"))
	m := newCLI(t, "")
	m.env["CERTORDER_URL"], m.env["CERTORDER_ACCESS_NAME"], m.env["CERTORDER_ACCESS_KEY"] = endpoint, "alice", key

	// Renewed upstream between two incremental syncs: the second links it.
	old := orders[0]
	newID, err := u.sim.Renew(old, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	second, _ := c.sync()
	if !strings.HasPrefix(second, "sync ok (incremental") || count(t, second, "renewals linked") != 1 || count(t, second, "pending") != 1 {
		t.Fatalf("second sync: %s", second)
	}
	oldS, newS := strconv.FormatInt(old, 10), strconv.FormatInt(newID, 10)
	if code, body := post(t, endpoint, request("alice", key, "RenewCheck", oldS)); code != 200 ||
		body != `{"orderId":`+oldS+`,"renewed_orderId":`+newS+`}` {
		t.Errorf("RenewCheck %s: %d %s", oldS, code, body)
	}
	code, body := post(t, endpoint, request("alice", key, "OrderInfo", newS))
	if code != 200 {
		t.Fatalf("OrderInfo on the pending renewal: %d %s", code, body)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatal(err)
	}
	onlySpecFields(t, "", info)
	cert := info["certificate"].(map[string]any)
	for _, absent := range []string{"valid_till", "valid_from", "days_remaining", "date_issued", "serial_number", "thumbprint", "ca_cert"} {
		if v, ok := cert[absent]; ok {
			t.Errorf("the pending order's certificate.%s is %v: invented", absent, v)
		}
	}
	if _, ok := info["date_issued"]; ok {
		t.Errorf("the pending order has date_issued: %s", body)
	}
	if info["status"] != "pending" || cert["common_name"] != "shop0.example.com" || cert["csr"] == nil || info["date_created"] == nil {
		t.Errorf("the pending order lacks what CertCentral gave: %s", body)
	}
	if strings.Contains(body, `""`) || strings.Contains(body, "0001-01-01") {
		t.Errorf("an empty or zero value stands for a date: %s", body)
	}

	// The member's commands follow the chain into it.
	if out := m.ok("current", oldS, "--id"); out != newS+"\n" {
		t.Errorf("current --id: %q", out)
	}
	cur := m.ok("current", oldS)
	for _, re := range []string{`Renewal chain:\s+` + oldS + ` -> ` + newS, `Status:\s+pending\n`, `Valid till:\s+not issued yet \(awaiting issuance\)`} {
		if !regexp.MustCompile(re).MatchString(cur) {
			t.Errorf("current lacks %s:\n%s", re, cur)
		}
	}
	if regexp.MustCompile(`Valid till:[^\n]*days`).MatchString(cur) || !regexp.MustCompile(`Next step:\s+none \(awaiting issuance`).MatchString(cur) {
		t.Errorf("current counts days for a pending order's certificate, or names a step:\n%s", cur)
	}
	if out := m.ok("info", newS); !regexp.MustCompile(`Status:\s+pending\n`).MatchString(out) {
		t.Errorf("info:\n%s", out)
	}
	if page := webOrderPage(t, strings.TrimSuffix(endpoint, "api/digicert/"), "alice", key, newS); !strings.Contains(page, "Awaiting issuance") {
		t.Errorf("the pending order's web page:\n%s", page)
	}
	if out := c.ok("admin", "order", "list", "alice"); !regexp.MustCompile(newS + `\s+shop0.example.com\s+pending\s+-\s+-\s+\d{4}-\d\d-\d\d\s+-\s+none \(awaiting issuance`).MatchString(out) {
		t.Errorf("admin order list:\n%s", out)
	}
	renewed := rc.wait(1)
	if renewed[0].typ != "order.renewed" || renewed[0].data["renewed_order_id"] != float64(newID) {
		t.Errorf("at link time: %s %v", renewed[0].typ, renewed[0].data)
	}

	// Issued upstream: the next sync brings the certificate's dates.
	if err := u.sim.Issue(newID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if third, _ := c.sync(); count(t, third, "changed") != 1 {
		t.Errorf("third sync: %s", third)
	}
	raw, _ := u.sim.OrderInfo(newID)
	var upstream struct {
		Certificate struct {
			ValidTill string `json:"valid_till"`
		} `json:"certificate"`
	}
	json.Unmarshal(raw, &upstream)
	_, body = post(t, endpoint, request("alice", key, "OrderInfo", newS))
	if upstream.Certificate.ValidTill == "" || !strings.Contains(body, `"valid_till":"`+upstream.Certificate.ValidTill+`"`) ||
		!strings.Contains(body, `"days_remaining":`) || !strings.Contains(body, `"status":"issued"`) {
		t.Errorf("after issuance upstream (%s): %s", upstream.Certificate.ValidTill, body)
	}
	got := rc.wait(2)
	if got[1].typ != "order.status_changed" || got[1].data["previous_status"] != "pending" || got[1].data["status"] != "issued" {
		t.Errorf("issuance: %s %v", got[1].typ, got[1].data)
	}

	// A renewal canceled upstream: the automation must not use it.
	canceled, err := u.sim.Renew(orders[1], 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := u.sim.SetStatus(canceled, "canceled", time.Now()); err != nil {
		t.Fatal(err)
	}
	c.sync()
	msg := m.fails(exitOrderEnded, "current", strconv.FormatInt(orders[1], 10), "--id")
	if !strings.Contains(msg, "canceled") || !strings.Contains(msg, strconv.FormatInt(canceled, 10)) {
		t.Errorf("a chain ending canceled: %s", msg)
	}
}

// An order not issued yet is imported as it is; one whose status says it
// was issued must have certificate.valid_till, and the message says which.
func TestImportPendingOrder(t *testing.T) {
	t.Parallel()
	c := newStoreCLI(t, testdb.SQLite(t))
	c.ok("admin", "member", "add", "alice")
	pending := `{"OrderId":7,"certificate":{"common_name":"new.example.com","dns_names":["new.example.com"]},"status":"pending","date_created":"2026-11-20T10:00:00+00:00"}`
	if _, errOut, err := c.run(pending, "admin", "order", "import", "--member", "alice", "-"); err != nil {
		t.Fatal(err, errOut)
	}
	var shown bytes.Buffer
	if out := c.ok("admin", "order", "show", "7"); json.Compact(&shown, []byte(out)) != nil ||
		shown.String() != `{"OrderId":7,"certificate":{"common_name":"new.example.com","dns_names":["new.example.com"]},"status":"pending","date_created":"2026-11-20T10:00:00+00:00","is_renewed":false}` {
		t.Errorf("order show: %s", out)
	}
	if out := c.ok("admin", "order", "show", "7", "--summary"); !regexp.MustCompile(`Status:\s+pending\n`).MatchString(out) ||
		!strings.Contains(out, "awaiting issuance") {
		t.Errorf("order show --summary:\n%s", out)
	}
	issued := `{"OrderId":8,"certificate":{"common_name":"x.example.com"},"status":"issued"}`
	_, errOut, err := c.run(issued, "admin", "order", "import", "--member", "alice", "-")
	if err == nil || !strings.Contains(errOut+err.Error(), "OrderId 8") || !strings.Contains(errOut+err.Error(), "certificate.valid_till") {
		t.Errorf("an issued order without valid_till: %v %s", err, errOut)
	}
}
