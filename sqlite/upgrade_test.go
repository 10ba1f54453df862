package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/sqlite"
	"github.com/certorder/certorder/storetest"
)

// A store made before certificate histories (migration 0009) keeps its
// orders' certificates, plans and notices through the upgrade.
func TestUpgradeToCertificateHistories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testdb.SQLite(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("migrations/*.sql")
	sort.Strings(files)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`)
	for v, f := range files[:8] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		exec(string(b))
		exec(`INSERT INTO schema_migrations VALUES (?, '2026-11-01T00:00:00Z')`, v+1)
	}
	exec(`INSERT INTO members (id, name, created_at) VALUES (1, 'alice', '2026-11-01T00:00:00Z')`)
	exec(`INSERT INTO orders (id, member_id, common_name, status, valid_till, doc, cert_end, updated_at, names)
		VALUES (1, 1, 'host1.example.com', 'issued', '2026-09-16', ?, 1, '2026-11-01T00:00:00Z', 'host1.example.com')`,
		[]byte(storetest.UpgradeDoc))
	exec(`INSERT INTO expiry_notices (order_id, threshold) VALUES (1, 30)`)
	db.Close()

	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.Upgraded(t, s)
}

// A store made before an order's current certificate left its history
// (migration 0020) keeps every history as it was read.
func TestUpgradeToCurrentCertificate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testdb.SQLite(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("migrations/*.sql")
	sort.Strings(files)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`)
	for _, f := range files {
		v, _ := strconv.Atoi(filepath.Base(f)[:4])
		if filepath.Base(f) >= "0020" {
			break
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		exec(string(b))
		exec(`INSERT INTO schema_migrations VALUES (?, '2026-11-01T00:00:00Z')`, v)
	}
	exec(`INSERT INTO members (id, name, created_at) VALUES (1, 'alice', '2026-11-01T00:00:00Z')`)
	up := storetest.HistoryUpgrade
	for id, doc := range up.Docs {
		exec(`INSERT INTO orders (id, member_id, common_name, status, valid_till, doc, cert_end, updated_at, names)
			VALUES (?, 1, 'host.example.com', 'issued', '', ?, 1, '2026-11-01T00:00:00Z', 'host.example.com')`, id, []byte(doc))
	}
	for _, e := range up.Entries {
		names, _ := json.Marshal(e.DNSNames)
		exec(`INSERT INTO order_certificates (order_id, cert_id, serial_number, thumbprint, common_name, dns_names, status,
			date_issued, valid_from, valid_till, serial_key, thumbprint_key, recorded_at, member_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '2026-11-01T00:00:00Z', 1)`, e.OrderID, e.ID, e.SerialNumber, e.Thumbprint,
			e.CommonName, string(names), e.Status, e.DateIssued, e.ValidFrom, e.ValidTill,
			certorder.SerialKey(e.SerialNumber), certorder.HexKey(e.Thumbprint))
	}
	db.Close()

	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.HistoryUpgraded(t, s)
}
