package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/storetest"
)

// admin order find: for each serial or thumbprint, the order, member,
// whether current and the order status, as a table, JSON lines or CSV;
// a CA's list of 100,000 serials from a file, in one query per batch.
func TestAdminOrderFind(t *testing.T) {
	t.Parallel()
	testdb.Each(t, testAdminOrderFind)
}

func testAdminOrderFind(t *testing.T, dsn string) {
	c := newStoreCLI(t, dsn)
	c.ok("admin", "member", "add", "alice")
	c.ok("admin", "member", "add", "@ops") // a name a spreadsheet would run as a formula
	importDocs(t, c, "alice", storetest.CertJSON(7001, 501, "0A01", "2026-03-01", "2026-09-16", "2029-03-01"))
	importDocs(t, c, "alice", storetest.CertJSON(7001, 502, "0A02", "2026-09-01", "2027-03-19", "2029-03-01"))
	importDocs(t, c, "@ops", storetest.CertJSON(8001, 601, "0B04", "2026-03-01", "2026-09-16", "2029-03-01"))

	out := c.ok("admin", "order", "find", "--serial", "0a:01", "--serial", "0B04", "--thumbprint", strings.Repeat("02", 20), "--serial", "ffff")
	for _, re := range []string{
		`(?m)^QUERY\s+ORDER\s+MEMBER\s+CERTIFICATE\s+SERIAL\s+CURRENT\s+ORDER STATUS$`,
		`(?m)^0a:01\s+7001\s+alice\s+501\s+0A01\s+no \(reissued\)\s+issued$`,
		`(?m)^0B04\s+8001\s+@ops\s+601\s+0B04\s+yes\s+issued$`,
		`(?m)^(02){20}\s+7001\s+alice\s+502\s+0A02\s+yes\s+issued$`,
		`(?m)^ffff\s+-\s+-\s+-\s+-\s+-\s+not found$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("the table lacks %s:\n%s", re, out)
		}
	}
	out = c.ok("admin", "order", "find", "--serial", "0A01", "--serial", "0C05", "--json")
	if want := `{"query":"0A01","found":true,"order_id":7001,"member":"alice","certificate_id":501,"serial_number":"0A01","order_status":"issued"}` +
		"\n" + `{"query":"0C05","found":false}` + "\n"; out != want {
		t.Errorf("--json:\n%s\nwant\n%s", out, want)
	}
	out = c.ok("admin", "order", "find", "--serial", "0B04", "--serial", "0C05", "--csv")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if want := "[[query found order_id member certificate_id serial_number is_current order_status] " +
		"[0B04 true 8001 '@ops 601 0B04 true issued] [0C05 false      ]]"; err != nil || fmt.Sprint(rows) != want {
		t.Errorf("--csv: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"admin", "order", "find"},
		{"admin", "order", "find", "--serial", "0x12"},
		{"admin", "order", "find", "--thumbprint", "0A01"},
		{"admin", "order", "find", "--serial", "0A01", "--json", "--csv"},
	} {
		c.fails(exitUsage, args...)
	}

	// A CA's list: 100,000 serials, in several spellings, 2,000 of them of
	// stored certificates; comments and blank lines skipped.
	var docs []string
	for i := range 1000 {
		docs = append(docs, storetest.CertJSON(int64(20001+i), int64(90001+i), fmt.Sprintf("1F%06X", i), "2026-03-01", "2026-09-16", "2029-03-01"))
	}
	importDocs(t, c, "alice", docs...)
	var list strings.Builder
	list.WriteString("# serial numbers of the certificates to revoke\n\n")
	for i := range 100_000 {
		switch {
		case i%100 == 0: // 1,000 stored, colon-separated in upper case
			n := fmt.Sprintf("1F%06X", i/100)
			fmt.Fprintf(&list, "%s:%s:%s:%s\n", n[:2], n[2:4], n[4:6], n[6:])
		case i%100 == 1: // the same, in lower case with leading zeros
			fmt.Fprintf(&list, "001f%06x\n", i/100)
		default:
			fmt.Fprintf(&list, "7E%030X\n", i)
		}
	}
	file := filepath.Join(t.TempDir(), "revoked.txt")
	if err := os.WriteFile(file, []byte(list.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, errOut, err := c.run("", "admin", "order", "find", "--from", file, "--json")
	took := time.Since(start)
	if err != nil {
		t.Fatalf("order find --from: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	found := 0
	for _, l := range lines {
		var r findRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r.Found {
			found++
			if r.Member != "alice" || r.OrderID < 20001 || !r.IsCurrent {
				t.Errorf("%s", l)
			}
		}
	}
	if len(lines) != 100_000 || found != 2000 || errOut != "looked up 100000: 2000 certificate(s) found, of 1 member(s); 98000 not found\n" {
		t.Errorf("order find --from: %d lines, %d found; %s", len(lines), found, errOut)
	}
	t.Logf("admin order find --from, 100,000 serials: %v", took)

	// A line that is no serial stops it before any look-up, naming the line.
	bad := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(bad, []byte("0A01\nserial\n0A02\n"), 0o600)
	if msg := c.fails(exitFailure, "admin", "order", "find", "--from", bad); !strings.Contains(msg, `line 2: "serial" is not a serial number or thumbprint`) {
		t.Errorf("a bad line: %s", msg)
	}
}
