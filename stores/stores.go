// Package stores opens the store a DSN names: the scheme picks the backend.
package stores

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/postgres"
	"github.com/certorder/certorder/sqlite"
)

// ErrNoStore is the error OpenExisting wraps when the DSN names no store:
// a SQLite file or directory that is not there, or a database without the
// certorder schema.
var ErrNoStore = errors.New("no certorder store")

// ErrBadDSN is the error CheckDSN, Open and OpenExisting wrap for a DSN that
// looks like a URL of a kind no store opens: it is not taken for a file name.
var ErrBadDSN = errors.New("not a certorder store DSN")

// Forms names the DSNs a store opens, for messages.
const Forms = "a PostgreSQL URL (postgres://USER@HOST:5432/DATABASE, or postgresql://...) " +
	"or a SQLite file path (./certorder.db, /var/lib/certorder/certorder.db, or sqlite:PATH)"

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// scheme matches what may be a URL's scheme: RFC 3986's characters, two or
// more of them (one is a Windows drive, C:\...), and the colon.
var scheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]+):`)

// CheckDSN refuses, wrapping ErrBadDSN, a DSN that is neither a postgres://
// nor a postgresql:// URL but starts like a URL (mysql://..., file:/x), or
// with a PostgreSQL scheme mistyped (pg://..., postgres:/x, postgress://...),
// so that it is not opened as a SQLite file of that name. Its message names
// the scheme, never the rest (which may hold a password), and the forms that
// are accepted. Anything else is a file path: "backup:2026.db" is a file.
func CheckDSN(dsn string) error {
	m := scheme.FindStringSubmatch(dsn)
	if m == nil || IsPostgres(dsn) {
		return nil
	}
	name, rest := strings.ToLower(m[1]), dsn[len(m[0]):]
	switch {
	case name == "postgres" || name == "postgresql":
		return fmt.Errorf("%w: a PostgreSQL URL starts with %s:// (two slashes), as in postgres://USER@HOST:5432/DATABASE",
			ErrBadDSN, name)
	case looksPostgres(name):
		return fmt.Errorf("%w: scheme %q is not one certorder knows: for PostgreSQL, write postgres://USER@HOST:5432/DATABASE (or postgresql://...)",
			ErrBadDSN, m[1])
	case name == "sqlite" && strings.HasPrefix(rest, "//") && !strings.HasPrefix(rest, "///"):
		// sqlite://x.db would open the file /x.db.
		return fmt.Errorf("%w: after sqlite: comes a file path (sqlite:./certorder.db, sqlite:/var/lib/certorder/certorder.db), not //HOST",
			ErrBadDSN)
	case name != "sqlite" && strings.HasPrefix(rest, "/"):
		return fmt.Errorf("%w: certorder has no store for scheme %q: give %s", ErrBadDSN, m[1], Forms)
	}
	return nil
}

// looksPostgres reports a scheme that is another name for PostgreSQL, or
// its own mistyped.
func looksPostgres(scheme string) bool {
	switch scheme {
	case "pg", "psql", "pgsql":
		return true
	}
	return levenshtein.ComputeDistance(scheme, "postgres") <= 2 || levenshtein.ComputeDistance(scheme, "postgresql") <= 2
}

// SQLitePath is the file a non-PostgreSQL DSN names (an optional sqlite:
// prefix is dropped).
func SQLitePath(dsn string) string { return strings.TrimPrefix(dsn, "sqlite:") }

// Store is a store as Open returns it: every role (certorder.Store) and
// what the sync and the import write through (storekit). Only the code
// that opens a store holds it whole; everything else takes a role.
type Store = storekit.Store

// Open opens a postgres:// or postgresql:// URL with the PostgreSQL store,
// and anything else CheckDSN accepts as a SQLite file path (an optional
// sqlite: prefix is dropped). It creates the store if it does not exist yet.
func Open(ctx context.Context, dsn string) (Store, error) {
	if err := CheckDSN(dsn); err != nil {
		return nil, err
	}
	if IsPostgres(dsn) {
		return postgres.Open(ctx, dsn)
	}
	return sqlite.Open(ctx, SQLitePath(dsn))
}

// OpenExisting is Open for a store that must already exist, so that a
// mistyped DSN is an error rather than a new, empty store. It refuses a
// SQLite path that does not exist (naming it, or the missing directory) and
// a database that lacks the certorder schema; the error wraps ErrNoStore.
// An existing store of an older schema is migrated, as Open does.
func OpenExisting(ctx context.Context, dsn string) (Store, error) {
	if err := Exists(ctx, dsn); err != nil {
		return nil, err
	}
	return Open(ctx, dsn)
}

// Exists checks, creating and changing nothing, that dsn names a store: an
// error wrapping ErrNoStore says what is missing (the file, its directory,
// the certorder tables); other errors are a DSN CheckDSN refuses or a store
// that cannot be read.
func Exists(ctx context.Context, dsn string) error {
	if err := CheckDSN(dsn); err != nil {
		return err
	}
	if IsPostgres(dsn) {
		return postgresExists(ctx, dsn)
	}
	return sqliteExists(ctx, SQLitePath(dsn))
}

func sqliteExists(ctx context.Context, path string) error {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil // sqlite.Open says what is wrong with the path
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(path)
		if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
			return fmt.Errorf("%w at %s: the directory %s does not exist", ErrNoStore, path, dir)
		}
		return fmt.Errorf("%w at %s: the file does not exist", ErrNoStore, path)
	case err != nil:
		return fmt.Errorf("store %s: %w", path, err)
	case fi.IsDir():
		return fmt.Errorf("%w at %s: it is a directory, not a SQLite file", ErrNoStore, path)
	}
	// A plain connection: it reads the schema and writes nothing.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	defer db.Close()
	// Two tables, because other tools name a table schema_migrations too.
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
		WHERE type = 'table' AND name IN ('schema_migrations', 'members')`).Scan(&n); err != nil {
		return fmt.Errorf("store %s cannot be read as a SQLite database: %w", path, err)
	}
	if n != 2 {
		return fmt.Errorf("%w at %s: the file is not a certorder store (it lacks the certorder tables)", ErrNoStore, path)
	}
	return nil
}

func postgresExists(ctx context.Context, dsn string) error {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("postgres: %w", err) // pgx's message leaves the password out
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second // as postgres.Open
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer pool.Close()
	// to_regclass looks in the search_path, where the store's tables are made.
	var ok bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL
		AND to_regclass('members') IS NOT NULL`).Scan(&ok); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w in PostgreSQL database %q on %s: it lacks the certorder tables (schema_migrations, members) in its search_path",
			ErrNoStore, cfg.ConnConfig.Database, cfg.ConnConfig.Host)
	}
	return nil
}

// Occupants reads, creating, migrating and changing nothing, who a store
// is for: its members' names and how many CertCentral orders a sync left
// unassigned. A store that does not exist yet has none. It reads only
// tables every schema version has had (members; unassigned_orders when
// there is one), so that serve --demo can look before it migrates.
func Occupants(ctx context.Context, dsn string) (members []string, unassigned int, err error) {
	if err := Exists(ctx, dsn); errors.Is(err, ErrNoStore) {
		return nil, 0, nil
	} else if err != nil {
		return nil, 0, err
	}
	const (
		names = `SELECT name FROM members ORDER BY id`
		count = `SELECT count(*) FROM unassigned_orders`
	)
	if IsPostgres(dsn) {
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			return nil, 0, fmt.Errorf("postgres: %w", err)
		}
		defer pool.Close()
		rows, _ := pool.Query(ctx, names)
		if members, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return nil, 0, fmt.Errorf("postgres: %w", err)
		}
		var has bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass('unassigned_orders') IS NOT NULL`).Scan(&has); err != nil || !has {
			return members, 0, err
		}
		return members, unassigned, pool.QueryRow(ctx, count).Scan(&unassigned)
	}
	path := SQLitePath(dsn)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, 0, fmt.Errorf("store %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, names)
	if err != nil {
		return nil, 0, fmt.Errorf("store %s: %w", path, err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("store %s: %w", path, err)
		}
		members = append(members, n)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store %s: %w", path, err)
	}
	var has int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'unassigned_orders'`).Scan(&has); err != nil || has == 0 {
		return members, 0, err
	}
	return members, unassigned, db.QueryRowContext(ctx, count).Scan(&unassigned)
}
