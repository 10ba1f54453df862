package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/importfile"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/sqlite"
	"github.com/certorder/certorder/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storekit.Store {
		path := testdb.SQLite(t)
		testdb.NewSQLite(t, path, func(path string) error { // the migrations once, then copies of the store
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				return err
			}
			return s.Close()
		})
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testdb.SQLite(t)
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(ctx, path) // migrations already applied: must not run again
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := s.Members(ctx)
	if err != nil || len(ms) != 1 {
		t.Fatalf("Members = %v, %v", ms, err)
	}
}

func TestBadPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "a?b", filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")} {
		if s, err := sqlite.Open(context.Background(), p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

// BenchmarkImport imports 10,000 orders into a new file per op; ns/op / 1e4 is the cost of one order.
func BenchmarkImport(b *testing.B) {
	var file strings.Builder
	file.WriteString("[")
	for i := 1; i <= 10000; i++ {
		if i > 1 {
			file.WriteString(",\n")
		}
		renewedBy := int64(0)
		if i%2 == 1 {
			renewedBy = int64(i + 1)
		}
		file.WriteString(storetest.OrderJSON(int64(i), renewedBy, "2030-01-01"))
	}
	file.WriteString("]")
	data := file.String()
	for b.Loop() {
		b.StopTimer()
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.AddMember(context.Background(), "alice"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.ImportOrders(context.Background(), "alice", importfile.Decode(strings.NewReader(data))); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}

// Audit rows written before segments are still read and pruned.
func TestLegacyAudit(t *testing.T) {
	t.Parallel()
	path := testdb.SQLite(t)
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", sqlite.AuditPath(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.LegacyAudit(t, s, func(e certorder.AuditEntry) error {
		_, err := db.Exec(`INSERT INTO audit_log (at, member, key_id, action, order_id, outcome, client_ip, count)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, e.Time.UTC().Format("2006-01-02T15:04:05.000000000Z"), e.Member, e.KeyID, e.Action,
			e.OrderID, e.Outcome, e.ClientIP, e.Count)
		return err
	})
}

func TestCache(t *testing.T) {
	t.Parallel()
	for name, check := range map[string]func(*testing.T, storekit.Store, storekit.Store){
		"plain": storetest.Cache, "filled": storetest.CacheFilled, "certificates": storetest.CertificateCache,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := testdb.SQLite(t)
			open := func() storekit.Store {
				s, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			check(t, open(), open())
		})
	}
}

// BenchmarkRestore restores an export of 10,000 orders into a new file per op.
func BenchmarkRestore(b *testing.B) {
	ctx := context.Background()
	src, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "src.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	if _, err := src.AddMember(ctx, "alice"); err != nil {
		b.Fatal(err)
	}
	docs := make([]string, 10000)
	for i := range docs {
		docs[i] = storetest.OrderJSON(int64(i+1), 0, "2030-01-01")
	}
	if _, err := src.ImportOrders(ctx, "alice", storetest.Orders(b, docs...)); err != nil {
		b.Fatal(err)
	}
	var dump strings.Builder
	if err := export.Write(ctx, src, &dump); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		dst, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "dst.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := dst.Restore(ctx, export.Read(strings.NewReader(dump.String()))); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		dst.Close()
		b.StartTimer()
	}
}

// Several processes opening a new store at once (serve starting under
// systemd while an operator's first admin command runs) each apply the
// migrations the others have not: the check of what is applied and the
// applying are one transaction, so none fails on a table another made
// (CI's systemd check once failed with "table sessions already exists").
func TestConcurrentOpenNewStore(t *testing.T) {
	t.Parallel()
	for range 5 {
		path := testdb.SQLite(t)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				s, err := sqlite.Open(context.Background(), path)
				if err == nil {
					err = s.Close()
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestDocumentFormats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testdb.SQLite(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.DocumentFormats(t, true, func() storekit.Store {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, func(id int64) (format, length int64) {
		if err := db.QueryRowContext(ctx, `SELECT doc_format, length(doc) FROM orders WHERE id = ?`, id).Scan(&format, &length); err != nil {
			t.Fatal(err)
		}
		return format, length
	}, func(id int64, doc []byte, format int64) {
		if _, err := db.ExecContext(ctx, `UPDATE orders SET doc = ?, doc_format = ? WHERE id = ?`, doc, format, id); err != nil {
			t.Fatal(err)
		}
	})
}
