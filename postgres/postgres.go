// Package postgres is the certorder.Store for several instances sharing one
// database: PostgreSQL through pgx v5 and its pool.
//
// One file per concept: members, keys, orders, audit, sessions, restore,
// sync; this one opens the store and holds what they share.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/migrations"
	"github.com/certorder/certorder/internal/storeerr"
	"github.com/certorder/certorder/internal/storekit"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

var _ storekit.Store = (*Store)(nil)

// Store is a certorder.Store on PostgreSQL.
type Store struct {
	storekit.Kit // what both stores do alike

	pool   *pgxpool.Pool
	cfg    *pgxpool.Config
	closed atomic.Bool
	cache  atomic.Pointer[cache] // nil until CacheSource
}

// The advisory locks, in PostgreSQL's two-key form: the first key names the
// lock, the second is the schema's (schemaKey), so that instances sharing
// a schema wait on each other and certorders in different schemas of one
// database (staging beside production; each test its own) never do.
// lockMigrations serialises migrations across instances starting at once;
// lockRenewals serialises writes to the renewal relation, so that two
// imports cannot build a cycle between them; lockSync (sync.go) is held by
// the one sync that runs; lockConfirmations serialises the confirmations'
// budget (noticebudget.go), which counts across members.
const (
	lockMigrations    int32 = 0x63657201 // "cer" 1
	lockRenewals      int32 = 0x63657202
	lockSync          int32 = 0x63657203
	lockConfirmations int32 = 0x63657204
)

// schemaKey is the advisory locks' second key: a hash of the schema the
// store's tables are in (a collision only makes two schemas share a lock).
const schemaKey = `hashtext(coalesce(current_schema(), ''))`

// lockTx takes an advisory lock until tx ends.
func lockTx(ctx context.Context, tx pgx.Tx, lock int32) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, `+schemaKey+`)`, lock)
	return err
}

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value string; pgx's pool_max_conns sets the pool size) and applies
// the migrations it has not seen yet. Without connect_timeout in the DSN,
// connecting gives up after 5 seconds, so that an outage fails fast.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err) // pgx's message leaves the password out
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		// Every query here is short, and a bad estimate (a subquery per
		// listed order) made PostgreSQL compile a page of the export for
		// 85 ms, its run taking 2: 1M orders exported in 80 s, 17 s without.
		// jit=on in the DSN wins.
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool, cfg: cfg}
	s.Kit = storekit.Kit{Read: pgDB{pool}, Write: pgDB{pool}, Sessions: pgDB{pool}, AuditDB: pgDB{pool}, Wrap: s.wrap, Greatest: "GREATEST",
		ForUpdate: " FOR UPDATE", InList: inList,
		List: arrayArg, ReadAgain: s.read,
		LockConfirmations: fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d, %s)`, lockConfirmations, schemaKey),
		SkipLocked:        " FOR UPDATE SKIP LOCKED", NoticeTargets: noticeTargets,
		EndpointTargets: endpointTargets, WriteEvents: writeEvents, Joined: "string_agg(%s::text, ',')", Contains: "strpos(o.names, %s) > 0",
		InTypes: func(column string) string { return "? = ANY(string_to_array(" + column + ", ','))" }}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	sub, _ := fs.Sub(migrationFiles, "migrations") // the path is a constant
	ms, err := migrations.List(sub)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockTx(ctx, tx, lockMigrations); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)`); err != nil {
			return err
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return err
		}
		pending, err := migrations.Pending(ms, current)
		if err != nil {
			return err
		}
		for _, m := range pending {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, now())`, m.Version); err != nil {
				return err
			}
		}
		return nil
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3F000" { // invalid_schema_name: "no schema has been selected to create in"
		return s.noSchema()
	}
	return s.wrap("postgres: migrate", err)
}

// noSchema is the error of a database where no schema of the search_path
// exists, so the tables have nowhere to go: what to create, or to fix.
func (s *Store) noSchema() error {
	path := s.cfg.ConnConfig.RuntimeParams["search_path"]
	if path == "" {
		return errors.New(`postgres: the database has no schema to create the certorder tables in: no schema of its search_path ` +
			`(the server's, by default "$user", public) exists; create one (CREATE SCHEMA certorder) and name it in the DSN ` +
			`(search_path=certorder), or restore the public schema`)
	}
	create := "CREATE SCHEMA " + pgx.Identifier{path}.Sanitize()
	if strings.Contains(path, ",") {
		create = "CREATE SCHEMA for one of them"
	}
	return fmt.Errorf("postgres: the database has no schema to create the certorder tables in: no schema of the DSN's search_path=%s exists; "+
		"create it (%s) or correct search_path in the DSN", path, create)
}

// Close closes the pool; every call after it fails with ErrUnavailable.
func (s *Store) Close() error {
	s.stopCache()
	s.closed.Store(true)
	s.pool.Close()
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.wrap("ping", s.pool.Ping(ctx))
}

func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// wrap turns a driver error into a store error by the rule of
// internal/storeerr. PostgreSQL's own unavailable conditions: connecting
// failed (refused, or the database does not accept connections now), the
// connection failed (SQLSTATE class 08), the server is short of resources
// or connections (53, 53300 too many connections), or an operator or a
// shutdown intervened (57, 57P0x: shutting down, starting up, terminated).
func (s *Store) wrap(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		return fmt.Errorf("%s: %w", op, certorder.ErrConflict)
	}
	return storeerr.Wrap(op, err, s.closed.Load(), func(err error) bool {
		var connectErr *pgconn.ConnectError
		switch {
		case errors.As(err, &connectErr):
			return true // whatever the server said, it did not let us in
		case pgErr != nil:
			class := pgErr.Code[:min(2, len(pgErr.Code))]
			return class == "08" || class == "53" || class == "57"
		}
		return errors.Is(err, pgconn.ErrConnClosed) || pgconn.Timeout(err) || pgconn.SafeToRetry(err)
	})
}

// read runs query, a read, once more when the database had closed the
// connection it ran on (an operator or a restart terminated it, or the
// network cut it), after resetting the pool: the pool's other connections
// most likely went with it. The pool pings a connection idle for over a
// second before handing it out, so what this saves is a connection closed
// within a second of its last use, as in a busy pool: before, each such
// connection was a 503 in turn although the database answered again (four
// in a row after pg_terminate_backend of a pool of four). Several requests
// that meet dead connections at once reset the pool each; the connections
// in use then are closed when given back, a few reconnections more.
func (s *Store) read(ctx context.Context, query func() error) error {
	err := query()
	if err != nil && ctx.Err() == nil && connLost(err) {
		s.pool.Reset()
		err = query()
	}
	return err
}

// connLost reports whether err says that an open connection was gone:
// closed by the server (57P01 terminated by an administrator or a fast
// shutdown, 57P02 a crash of another backend) or cut (storeerr.ConnCut,
// pgx's closed connection). A connection that could not be opened is not one: the database
// (or a proxy before it) is down, and trying again at once would not help.
func connLost(err error) bool {
	var connectErr *pgconn.ConnectError
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &connectErr):
		return false
	case errors.As(err, &pgErr):
		return pgErr.Code == "57P01" || pgErr.Code == "57P02"
	}
	return errors.Is(err, pgconn.ErrConnClosed) || storeerr.ConnCut(err)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// nullTime is NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
