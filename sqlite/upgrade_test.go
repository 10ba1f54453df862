package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
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
	path, exec, closeDB := schemaBefore(t, 9)
	exec(`INSERT INTO members (id, name, created_at) VALUES (1, 'alice', '2026-11-01T00:00:00Z')`)
	exec(`INSERT INTO orders (id, member_id, common_name, status, valid_till, doc, cert_end, updated_at, names)
		VALUES (1, 1, 'host1.example.com', 'issued', '2026-09-16', ?, 1, '2026-11-01T00:00:00Z', 'host1.example.com')`,
		[]byte(storetest.UpgradeDoc))
	exec(`INSERT INTO expiry_notices (order_id, threshold) VALUES (1, 30)`)
	closeDB()

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
	path, exec, closeDB := schemaBefore(t, 20)
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
	closeDB()

	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.HistoryUpgraded(t, s)
}

// schemaBefore makes a SQLite store with the schema of the migrations
// before version, as a release before it left it. It returns the store's
// path and a function that runs a statement on it; close closes it, for
// sqlite.Open.
func schemaBefore(t *testing.T, version int) (path string, exec func(q string, args ...any), close func()) {
	t.Helper()
	path = testdb.SQLite(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	exec = func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`)
	for _, m := range testdb.MigrationsBefore(t, version) {
		exec(m.SQL)
		exec(`INSERT INTO schema_migrations VALUES (?, '2026-11-01T00:00:00Z')`, m.Version)
	}
	return path, exec, func() { db.Close() }
}
