package stores_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/stores"
)

// OpenExisting refuses what is not a store, names it, and creates nothing.
func TestOpenExistingSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign.db") // a SQLite file of something else
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a database, but long enough to have a header of some sort.............................................................................................................."), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		noStore    bool
	}{
		{filepath.Join(dir, "typo.db"), "typo.db: the file does not exist", true},
		{filepath.Join(dir, "nodir", "c.db"), "the directory " + filepath.Join(dir, "nodir") + " does not exist", true},
		{dir, "it is a directory", true},
		{foreign, "foreign.db: the file is not a certorder store", true},
		{text, "notes.txt cannot be read as a SQLite database", false},
	} {
		s, err := stores.OpenExisting(ctx, tc.path)
		if err == nil {
			s.Close()
			t.Errorf("OpenExisting(%s) succeeded", tc.path)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || errors.Is(err, stores.ErrNoStore) != tc.noStore {
			t.Errorf("OpenExisting(%s) = %v, want %q (ErrNoStore %v)", tc.path, err, tc.want, tc.noStore)
		}
	}
	for _, p := range []string{filepath.Join(dir, "typo.db"), filepath.Join(dir, "typo.db-audit"), filepath.Join(dir, "nodir")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}

	// A store made by Open is found, with or without the sqlite: prefix.
	path := filepath.Join(dir, "real.db")
	s, err := stores.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, dsn := range []string{path, "sqlite:" + path} {
		s, err := stores.OpenExisting(ctx, dsn)
		if err != nil {
			t.Fatalf("OpenExisting(%s): %v", dsn, err)
		}
		s.Close()
	}
}

func TestOpenExistingPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.Postgres(t) // an empty schema of its own
	if s, err := stores.OpenExisting(ctx, dsn); err == nil {
		s.Close()
		t.Fatal("OpenExisting accepted a database without the certorder tables")
	} else if !errors.Is(err, stores.ErrNoStore) || !strings.Contains(err.Error(), "lacks the certorder tables") {
		t.Fatalf("OpenExisting: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("after the refusal the schema holds %d tables (%v)", tables, err)
	}
	s, err := stores.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// postgresql:// is the same store.
	for _, dsn := range []string{dsn, "postgresql://" + strings.TrimPrefix(dsn, "postgres://")} {
		s, err = stores.OpenExisting(ctx, dsn)
		if err != nil {
			t.Fatalf("OpenExisting(%s) after Open: %v", dsn, err)
		}
		s.Close()
	}
}

// A DSN that looks like a URL certorder does not open is refused, saying
// which forms are accepted, and never taken for a SQLite file name.
func TestCheckDSN(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // a refused DSN must leave no file here (t.Chdir rules out t.Parallel)
	for _, tc := range []struct {
		dsn  string
		want string // in the error; "" for a DSN accepted
	}{
		{"pg://127.0.0.1/test", `scheme "pg" is not one certorder knows: for PostgreSQL, write postgres://`},
		{"postgres:/x", "a PostgreSQL URL starts with postgres:// (two slashes)"},
		{"postgresql:x", "a PostgreSQL URL starts with postgresql:// (two slashes)"},
		{"postgress://127.0.0.1/test", `scheme "postgress" is not one certorder knows`},
		{"mysql://u:s3cret@127.0.0.1/db", `certorder has no store for scheme "mysql": give a PostgreSQL URL (postgres://`},
		{"file:/var/lib/certorder.db", `no store for scheme "file"`},
		{"sqlite://certorder.db", "after sqlite: comes a file path"},
		// Accepted: postgresql:// is PostgreSQL's own other name (libpq's too).
		{"postgresql://127.0.0.1/test", ""},
		{"postgres://u:s3cret@127.0.0.1/test", ""},
		{"./certorder.db", ""},
		{"certorder.db", ""},
		{"sqlite:certorder.db", ""},
		{"sqlite:///var/lib/certorder/certorder.db", ""},
		{"backup:2026.db", ""}, // a file name with a colon
		{`C:\certorder\certorder.db`, ""},
	} {
		err := stores.CheckDSN(tc.dsn)
		if tc.want == "" {
			if err != nil {
				t.Errorf("CheckDSN(%s) = %v, want it accepted", tc.dsn, err)
			}
			continue
		}
		if !errors.Is(err, stores.ErrBadDSN) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckDSN(%s) = %v, want ErrBadDSN with %q", tc.dsn, err, tc.want)
		}
		for name, open := range map[string]func(context.Context, string) (stores.Store, error){
			"Open": stores.Open, "OpenExisting": stores.OpenExisting} {
			if s, err := open(context.Background(), tc.dsn); !errors.Is(err, stores.ErrBadDSN) {
				if s != nil {
					s.Close()
				}
				t.Errorf("%s(%s) = %v, want ErrBadDSN", name, tc.dsn, err)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("a refused DSN left %s behind", entries[0].Name())
	}
}

// Occupants reads a store's members without creating, migrating or
// changing it: none for a store that does not exist yet (which it leaves
// so), the names once there are some.
func TestOccupants(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		if strings.HasPrefix(dsn, "postgres") {
			if ms, n, err := stores.Occupants(ctx, dsn); err != nil || ms != nil || n != 0 {
				t.Fatalf("an empty schema: %v %d %v", ms, n, err)
			}
		} else {
			missing := filepath.Join(t.TempDir(), "new.db")
			if ms, n, err := stores.Occupants(ctx, missing); err != nil || ms != nil || n != 0 {
				t.Fatalf("a store that does not exist: %v %d %v", ms, n, err)
			}
			if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Occupants made %s: %v", missing, err)
			}
		}
		s, err := stores.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, name := range []string{"alice", "demo"} {
			if _, err := s.AddMember(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		if ms, n, err := stores.Occupants(ctx, dsn); err != nil || strings.Join(ms, ",") != "alice,demo" || n != 0 {
			t.Fatalf("a store of alice and demo: %v %d %v", ms, n, err)
		}
	})
}
