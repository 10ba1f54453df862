package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sort"
	"testing"

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
