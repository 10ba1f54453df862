package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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
		{"admin", "order", "find", "--serial", "0x"},
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

// badLines is --from's input: n bad lines, made as they are read; at its
// end it notes the heap that is live then (after a collection), when
// admin order find has read every line and looked nothing up yet.
type badLines struct {
	n, at   int
	pending []byte
	liveEnd uint64
}

func (b *badLines) Read(p []byte) (int, error) {
	if len(b.pending) == 0 {
		if b.at == b.n {
			b.liveEnd = liveHeap()
			return 0, io.EOF
		}
		b.at++
		b.pending = fmt.Appendf(nil, "not-a-serial-number-%08d-%s\n", b.at, strings.Repeat("z", 40))
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A --from file of bad lines of any size: the first ten named and the
// rest counted, in memory that does not grow with the file (issue 46: 300
// MB of bad lines held 468 MB); a file of blank lines says it has nothing
// to look up. Not parallel: it measures the heap.
func TestAdminOrderFindBadLines(t *testing.T) {
	c := newStoreCLI(t, testdb.SQLite(t))
	const n = 300_000 // 24 MB of bad lines
	in := &badLines{n: n}
	before := liveHeap()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"admin", "order", "find", "--from", "-"}, func(k string) string { return c.env[k] },
		in, &stdout, &stderr)
	if err == nil || exitCode(err) != exitFailure {
		t.Fatalf("order find --from of bad lines: %v (exit %d)", err, exitCode(err))
	}
	msg := err.Error()
	if !strings.Contains(msg, `line 1: "not-a-serial-number-00000001-`) || !strings.Contains(msg, "line 10: ") ||
		strings.Contains(msg, "line 11: ") || !strings.Contains(msg, fmt.Sprintf("(and %d more bad lines)", n-10)) ||
		!strings.Contains(msg, "nothing looked up") {
		t.Errorf("order find --from of bad lines:\n%s", msg)
	}
	if grew := int64(in.liveEnd) - int64(before); grew > 4<<20 {
		t.Errorf("the heap grew by %d MB reading %d bad lines: the lines are kept", grew>>20, n)
	}

	for name, file := range map[string]string{"blank": "\n\n  \n\t\n", "comments": "# revoked on 2026-11-28\n\n# none of ours\n", "empty": ""} {
		path := filepath.Join(t.TempDir(), name+".txt")
		os.WriteFile(path, []byte(file), 0o600)
		msg := c.fails(exitFailure, "admin", "order", "find", "--from", path)
		if !strings.Contains(msg, path+" has no serial number or thumbprint to look up") || strings.Contains(msg, "give --serial") {
			t.Errorf("a %s file: %s", name, msg)
		}
	}

	// A line over the scanner's bound is named, not quoted.
	long := filepath.Join(t.TempDir(), "long.txt")
	os.WriteFile(long, []byte("0A01\n"+strings.Repeat("f", 100<<10)+"\n"), 0o600)
	if msg := c.fails(exitFailure, "admin", "order", "find", "--from", long); !strings.Contains(msg, "line 2 is over 64 KiB") || len(msg) > 500 {
		t.Errorf("a long line: %.500s", msg)
	}
}
