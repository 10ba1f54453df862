// Package sqlite is the embedded certorder.Store: one SQLite file in WAL
// mode, through the pure-Go modernc.org/sqlite driver (no cgo).
//
// One file per concept: members, keys, orders, audit, sessions, restore,
// sync; this one opens the store and holds what they share.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/migrations"
	"github.com/certorder/certorder/internal/storeerr"
	"github.com/certorder/certorder/internal/storekit"
)

// The store's migrations. An order's document may be stored compressed
// (orders.doc_format 257, storekit.PackDoc) or not (1, as written before
// the compression): a migration that reads documents in SQL (as 0009
// and 0020 did, with json_extract) cannot; it would be Go reading them
// through storekit.Document.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// The audit trail lives in a file of its own, beside the store's: it is
// written on every request, and a write to the store's file would make
// every reader drop its page cache.
//
//go:embed audit-migrations/*.sql
var auditMigrationFiles embed.FS

// AuditPath is the file of the audit trail of the store at path.
func AuditPath(path string) string { return path + "-audit" }

// The web page's sessions live in a file of their own too: a sign-in
// writes one, and must not wait behind an import, which holds the store
// file's one write lock for its whole transaction.
//
//go:embed sessions-migrations/*.sql
var sessionMigrationFiles embed.FS

// SessionsPath is the file of the web sessions of the store at path.
func SessionsPath(path string) string { return path + "-sessions" }

var _ storekit.Store = (*Store)(nil)

// Store is a certorder.Store on one SQLite file.
type Store struct {
	storekit.Kit // what both stores do alike

	read     *sql.DB // concurrent readers; WAL lets them run beside the writer
	write    *sql.DB // one connection: SQLite allows one writer at a time
	audit    *sql.DB // the audit trail's file, one connection
	sessions *sql.DB // the web sessions' file, one connection
	path     string  // the database file, beside which the sync's lock file lies
	closed   atomic.Bool
	cache    atomic.Pointer[cache] // nil until CacheSource

	findOrder, findCredential, findCredentialOrder *sql.Stmt
}

// timeLayout sorts as text in time order (storekit.Time reads it).
const timeLayout = storekit.TimeLayout

// dsn is the data source of the database file at path. PRAGMAs go in the
// DSN so that every pooled connection gets them.
func dsn(path string) string { return dsnMapped(path, 256<<20) }

// dsnMapped is dsn with up to mmap bytes of the file memory-mapped. The
// driver keeps the first of two _pragma of a name, so it is said once.
func dsnMapped(path string, mmap int64) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)" +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=mmap_size(" + strconv.FormatInt(mmap, 10) + ")"
}

// readMapped is how much of the file the read connections map: as much as
// SQLite allows (its SQLITE_MAX_MMAP_SIZE, 2 GiB less 64 KiB). A page read
// through the mapping costs no system call: an order not cached, read from
// loadbench's 2.1 GB store of 1M orders, took 16.3 µs with 256 MiB mapped
// (pread 35% of it) and 9.7-11.2 µs with this (go test -bench Miss
// ./sqlite). The mapped pages are the kernel's page cache, counted as
// file-backed memory, not the process's own.
const readMapped = 2147418112

// Open opens (creating if need be) the database file at path and applies
// the migrations it has not seen yet. It refuses a database whose schema is
// newer than this binary knows.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: bad database path %q", path)
	}
	write, err := openMigrated(ctx, dsn(path), migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	s := &Store{write: write, path: path}
	if s.audit, err = openMigrated(ctx, dsn(AuditPath(path)), auditMigrationFiles, "audit-migrations"); err != nil {
		write.Close()
		return nil, err
	}
	if s.sessions, err = openMigrated(ctx, dsn(SessionsPath(path)), sessionMigrationFiles, "sessions-migrations"); err != nil {
		s.Close()
		return nil, err
	}
	if s.read, err = sql.Open("sqlite", dsnMapped(path, readMapped)+"&_pragma=query_only(1)"); err != nil {
		s.Close()
		return nil, err
	}
	s.read.SetMaxOpenConns(4)
	s.read.SetMaxIdleConns(4)
	s.Kit = storekit.Kit{Read: sqlDB{s.read, s.read}, Write: sqlDB{s.write, s.write}, Sessions: sqlDB{s.sessions, s.sessions},
		AuditDB: sqlDB{s.audit, s.audit}, SessionsApart: true, Wrap: s.wrap, Greatest: "max", NoLimit: -1,
		InList: inList, List: listJSON, NoticeTargets: noticeTargets,
		EndpointTargets: endpointTargets, WriteEvents: writeEvents, Joined: "group_concat(%s)", Contains: "instr(o.names, %s) > 0",
		InTypes: func(column string) string { return "',' || " + column + " || ',' LIKE '%,' || ? || ',%'" }}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return s, nil
}

// prepare prepares the statements of the hot path.
func (s *Store) prepare(ctx context.Context) (err error) {
	if s.findOrder, err = s.read.PrepareContext(ctx, `SELECT `+storekit.OrderColumns+`, `+storekit.LifecycleColumns+`, m.name
		FROM orders o JOIN members m ON m.id = o.member_id`+storekit.LifecycleJoin+` WHERE o.id = ?`); err != nil {
		return err
	}
	// The order is joined only if it is the key's member's: another
	// member's order is never read, so it costs what a missing one does.
	if s.findCredentialOrder, err = s.read.PrepareContext(ctx, `SELECT `+storekit.CredentialColumns+`, `+storekit.OrderColumns+`
		FROM api_keys k JOIN members m ON m.id = k.member_id
		LEFT JOIN orders o ON o.id = ? AND o.member_id = k.member_id
		WHERE k.id = ?`); err != nil {
		return err
	}
	// Without an order: one statement for both would be re-prepared by
	// SQLite each time the order parameter switched between 0 and a number.
	s.findCredential, err = s.read.PrepareContext(ctx, `SELECT `+storekit.CredentialColumns+`, `+storekit.NoOrderColumns+`
		FROM api_keys k JOIN members m ON m.id = k.member_id WHERE k.id = ?`)
	return err
}

// openMigrated opens a one-connection writer on a database file and applies
// the migrations in dir of fsys that it has not seen yet.
func openMigrated(ctx context.Context, dsn string, fsys embed.FS, dir string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	// A new file that another process is making at the same moment
	// (setting it to WAL, migrating it) answers SQLITE_BUSY at once, without
	// waiting out busy_timeout: tried again for as long.
	for deadline := time.Now().Add(10 * time.Second); ; {
		err = migrate(ctx, db, fsys, dir)
		var se *sqlite.Error
		if err == nil {
			return db, nil
		}
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			db.Close()
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func migrate(ctx context.Context, db *sql.DB, fsys embed.FS, dir string) error {
	sub, _ := fs.Sub(fsys, dir) // dir is a constant
	ms, err := migrations.List(sub)
	if err != nil {
		return err
	}
	// Made in a transaction of its own, and only when missing: BEGIN
	// IMMEDIATE waits for the write lock (run alone, the statement upgrades
	// a read to a write, which in WAL mode fails at once if another process
	// wrote in between), and opening a store that has the table takes no
	// write lock (an import may hold it for a minute).
	var made bool
	err = db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations')`).Scan(&made)
	if err == nil && !made {
		err = inTx(ctx, db, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("sqlite: open database: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	pending, err := migrations.Pending(ms, current)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	// Each migration in a transaction that holds the write lock from its
	// start (_txlock=immediate) and applies it only if no other process
	// did since the read above: serve starting under systemd and an
	// operator's first command may open a new store at once.
	for _, m := range pending {
		err := inTx(ctx, db, func(tx *sql.Tx) error {
			var applied bool
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`,
				m.Version).Scan(&applied); err != nil || applied {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				m.Version, now())
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// Close closes the database; every call after it fails with ErrUnavailable.
func (s *Store) Close() error {
	s.closed.Store(true)
	var errs []error
	c := s.cache.Swap(nil)
	for _, db := range []*sql.DB{s.read, s.sessions, s.audit, s.write} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	// The cache last: closing its descriptor of the -shm file drops this
	// process's locks on it (mapShared), which must outlive the connections.
	if c != nil {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.wrap("ping", s.read.PingContext(ctx))
}

// wrap turns a driver error into a store error by the rule of
// internal/storeerr. SQLite's own unavailable conditions: another process
// holds the lock past the busy timeout, the file cannot be read, written
// or opened, the disk is full.
func (s *Store) wrap(op string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%s: %w", op, certorder.ErrConflict)
		}
	}
	return storeerr.Wrap(op, err, s.closed.Load(), func(err error) bool {
		if errors.Is(err, sql.ErrConnDone) {
			return true
		}
		if se == nil {
			return false
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN:
			return true
		}
		return false
	})
}

// now is the current time as stored, to the microsecond as PostgreSQL keeps
// it, so that an export reads the same from either store.
func now() string { return formatTime(time.Now()) }

func formatTime(t time.Time) string { return t.UTC().Truncate(time.Microsecond).Format(timeLayout) }

func parseTime(s sql.NullString) time.Time {
	if !s.Valid {
		return time.Time{}
	}
	t, _ := time.Parse(timeLayout, s.String)
	return t
}

// txBeginner is a *sql.DB or one of its *sql.Conn (bulkTx's).
type txBeginner interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}

// inTx runs fn in a transaction of db, committed unless fn fails.
func inTx(ctx context.Context, db txBeginner, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// oneRow turns an update that touched no row into ErrNotFound.
func oneRow(res sql.Result, err error, what string) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%w: %s", certorder.ErrNotFound, what)
	}
	return nil
}
