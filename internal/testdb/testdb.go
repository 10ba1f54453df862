// Package testdb gives tests a fresh store on each backend: a SQLite file
// in a temp dir, and a PostgreSQL schema of their own when configured.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder/internal/migrations"
)

// EnvDSN names the variable that points the tests at a PostgreSQL server.
const EnvDSN = "CERTORDER_TEST_POSTGRES"

// Postgres's two messages: a test logs UsesPostgres when it runs on
// PostgreSQL and skips with SkipsPostgres without it, so that
// .ci/testsummary.go counts the tests that need PostgreSQL either way (and
// checks the README's figure with it). It spells them out too: keep them equal.
const (
	UsesPostgres  = "testdb: this test uses PostgreSQL"
	SkipsPostgres = "PostgreSQL tests skipped"
)

// Postgres returns a DSN for a new, empty schema on the server named by
// CERTORDER_TEST_POSTGRES; the schema is dropped when the test ends.
// Without the variable the test is skipped, unless CI=true: CI must run them.
func Postgres(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvDSN)
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s is not set: the PostgreSQL tests must run in CI", EnvDSN)
		}
		t.Skipf("%s: set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them", SkipsPostgres, EnvDSN)
	}
	t.Log(UsesPostgres)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", EnvDSN, err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "certorder_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return WithParam(base, "search_path", schema)
}

// WithParam adds a query parameter to a postgres:// URL.
func WithParam(dsn, key, value string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + url.QueryEscape(key) + "=" + url.QueryEscape(value)
}

// SQLite returns the path of a new SQLite file in a directory of the
// test's own (newDir).
func SQLite(t testing.TB) string {
	return filepath.Join(newDir(t), "certorder.db")
}

// template is the files of an empty, migrated SQLite store, made once in
// the process (NewSQLite).
var template struct {
	once  sync.Once
	files map[string][]byte // by name: certorder.db and the files beside it
	err   error
}

// NewSQLite makes a new, empty SQLite store at path, a file path where
// nothing is yet (a DSN, which has a colon, is left alone): a copy of the
// one build makes, once in the process, at the path it is given, with the
// files beside it that build leaves (the audit trail's and the sessions',
// path + "-audit" and so on). For the tests that each begin with a new
// store: applying every migration to one took 27 ms of CPU (sqlite's
// BenchmarkOpen/new on the 2-core machine), 220 times a run of the suite; a
// copy takes well under a millisecond. build must close the store it makes.
func NewSQLite(t testing.TB, path string, build func(path string) error) {
	t.Helper()
	if _, err := os.Stat(path); strings.Contains(path, ":") || !errors.Is(err, fs.ErrNotExist) {
		return
	}
	template.once.Do(func() {
		dir, err := os.MkdirTemp(memFS(), "certorder-template-")
		if err != nil {
			template.err = err
			return
		}
		defer os.RemoveAll(dir)
		if template.err = build(filepath.Join(dir, "certorder.db")); template.err != nil {
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			template.err = err
			return
		}
		template.files = map[string][]byte{}
		for _, e := range entries {
			if template.files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				template.err = err
				return
			}
		}
	})
	if template.err != nil {
		t.Fatalf("testdb: the template store: %v", template.err)
	}
	for name, b := range template.files {
		if err := os.WriteFile(path+strings.TrimPrefix(name, "certorder.db"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// newDir returns a new directory, removed when the test ends: in memory
// (memFS) where the machine has room there, else t.TempDir(). The store
// tests check what the store writes and reads, not the disk's fsync; on
// disk, a new SQLite store's migrations alone took 28 ms against 11 ms in
// memory, and the server package's tests 6.4 s of CPU (6.6 s of wall time)
// against 4.4 s (2.9 s).
func newDir(t testing.TB) string {
	t.Helper()
	mem := memFS()
	if mem == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(mem, "certorder-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// Each runs fn as a subtest on each backend, with the DSN of a fresh store;
// the two run in parallel (fn must not share state between them). The
// PostgreSQL subtest skips (or fails under CI=true) as Postgres says.
func Each(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); fn(t, Postgres(t)) })
}

// WaitBoundParallel raises -test.parallel to 8 (or GOMAXPROCS, if more)
// unless the command line sets it: for a TestMain whose package's tests
// mostly wait on processes, timers and the network rather than the CPU,
// so that on a 2-core machine more than two of them wait at once. Call it
// before m.Run.
func WaitBoundParallel() { WaitBoundParallelAt(8) }

// WaitBoundParallelAt is WaitBoundParallel with n (or GOMAXPROCS, if more)
// instead of 8.
func WaitBoundParallelAt(n int) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}

// MigrationsBefore reads the migrations in the test's migrations/ folder
// (migrations.List) numbered below version, in order: an upgrade test makes
// the schema a release before that one left, with them, and fills it.
func MigrationsBefore(t testing.TB, version int) []migrations.Migration {
	t.Helper()
	ms, err := migrations.List(os.DirFS("migrations"))
	if err != nil || len(ms) == 0 {
		t.Fatalf("no migrations/*.sql here: %v", err)
	}
	n := 0
	for n < len(ms) && ms[n].Version < version {
		n++
	}
	return ms[:n]
}
