package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/postgres"
	"github.com/certorder/certorder/storetest"
)

// A store made before certificate histories (migration 0012) keeps its
// orders' certificates, plans and notices through the upgrade.
func TestUpgradeToCertificateHistories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, exec, closeDB := schemaBefore(t, 12)
	exec(`INSERT INTO members (id, name, created_at) VALUES (1, 'alice', now())`)
	exec(`INSERT INTO orders (id, member_id, common_name, status, valid_till, doc, cert_end, updated_at, names)
		VALUES (1, 1, 'host1.example.com', 'issued', '2026-09-16', $1, 1, now(), 'host1.example.com')`,
		[]byte(storetest.UpgradeDoc))
	exec(`INSERT INTO expiry_notices (order_id, threshold) VALUES (1, 30)`)
	exec(`SELECT setval('members_id_seq', 1)`)
	closeDB()

	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.Upgraded(t, s)
}

// A store made before an order's current certificate left its history
// (migration 0023) keeps every history as it was read.
func TestUpgradeToCurrentCertificate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, exec, closeDB := schemaBefore(t, 23)
	exec(`INSERT INTO members (id, name, created_at) VALUES (1, 'alice', now())`)
	exec(`SELECT setval('members_id_seq', 1)`)
	up := storetest.HistoryUpgrade
	for id, doc := range up.Docs {
		exec(`INSERT INTO orders (id, member_id, common_name, status, valid_till, doc, cert_end, updated_at, names)
			VALUES ($1, 1, 'host.example.com', 'issued', '', $2, 1, now(), 'host.example.com')`, id, []byte(doc))
	}
	for _, e := range up.Entries {
		names, _ := json.Marshal(e.DNSNames)
		exec(`INSERT INTO order_certificates (order_id, cert_id, serial_number, thumbprint, common_name, dns_names, status,
			date_issued, valid_from, valid_till, serial_key, thumbprint_key, recorded_at, member_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now(), 1)`, e.OrderID, e.ID, e.SerialNumber, e.Thumbprint,
			e.CommonName, string(names), e.Status, e.DateIssued, e.ValidFrom, e.ValidTill,
			certorder.SerialKey(e.SerialNumber), certorder.HexKey(e.Thumbprint))
	}
	closeDB()

	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.HistoryUpgraded(t, s)
}

// schemaBefore makes a PostgreSQL store with the schema of the migrations
// before version, as a release before it left it. It returns the store's
// DSN and a function that runs a statement on it; close closes it, for
// postgres.Open.
func schemaBefore(t *testing.T, version int) (dsn string, exec func(q string, args ...any), close func()) {
	t.Helper()
	ctx := context.Background()
	dsn = testdb.Postgres(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	exec = func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)`)
	for _, m := range testdb.MigrationsBefore(t, version) {
		exec(m.SQL)
		exec(`INSERT INTO schema_migrations VALUES ($1, now())`, m.Version)
	}
	return dsn, exec, func() { conn.Close(ctx) }
}
