// Package sqlite is the embedded certorder.Store: one SQLite file in WAL
// mode, through the pure-Go modernc.org/sqlite driver (no cgo).
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/migrations"
	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

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

var _ certorder.Store = (*Store)(nil)

// Store is a certorder.Store on one SQLite file.
type Store struct {
	read  *sql.DB // concurrent readers; WAL lets them run beside the writer
	write *sql.DB // one connection: SQLite allows one writer at a time
	audit *sql.DB // the audit trail's file, one connection

	findOrder, findCredential, findCredentialOrder *sql.Stmt
}

// timeLayout sorts as text in time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// Open opens (creating if need be) the database file at path and applies
// the migrations it has not seen yet. It refuses a database whose schema is
// newer than this binary knows.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: bad database path %q", path)
	}
	// PRAGMAs go in the DSN so that every pooled connection gets them.
	dsn := func(path string) string {
		return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)" +
			"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=mmap_size(268435456)"
	}
	write, err := openMigrated(ctx, dsn(path), migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	s := &Store{write: write}
	if s.audit, err = openMigrated(ctx, dsn(AuditPath(path)), auditMigrationFiles, "audit-migrations"); err != nil {
		write.Close()
		return nil, err
	}
	read, err := sql.Open("sqlite", dsn(path)+"&_pragma=query_only(1)")
	if err != nil {
		s.Close()
		return nil, err
	}
	read.SetMaxOpenConns(4)
	read.SetMaxIdleConns(4)
	s.read = read
	if s.findOrder, err = read.PrepareContext(ctx, `SELECT o.id, o.member_id, m.name, o.common_name,
		o.status, o.valid_till, COALESCE(o.renewed_by, 0), o.doc, o.cert_end
		FROM orders o JOIN members m ON m.id = o.member_id WHERE o.id = ?`); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if s.findCredentialOrder, err = read.PrepareContext(ctx, `SELECT k.id, k.hash, k.revoked_at IS NOT NULL,
		m.id, m.name, m.disabled, o.id, o.member_id, o.common_name, o.status, o.valid_till,
		COALESCE(o.renewed_by, 0), o.doc, o.cert_end
		FROM api_keys k JOIN members m ON m.id = k.member_id LEFT JOIN orders o ON o.id = ?
		WHERE k.id = ?`); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	// Without an order: one statement for both would be re-prepared by
	// SQLite each time the order parameter switched between 0 and a number.
	if s.findCredential, err = read.PrepareContext(ctx, `SELECT k.id, k.hash, k.revoked_at IS NOT NULL,
		m.id, m.name, m.disabled, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL
		FROM api_keys k JOIN members m ON m.id = k.member_id WHERE k.id = ?`); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return s, nil
}

// openMigrated opens a one-connection writer on a database file and applies
// the migrations in dir of fsys that it has not seen yet.
func openMigrated(ctx context.Context, dsn string, fsys embed.FS, dir string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := migrate(ctx, db, fsys, dir); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func migrate(ctx context.Context, db *sql.DB, fsys embed.FS, dir string) error {
	sub, _ := fs.Sub(fsys, dir) // dir is a constant
	ms, err := migrations.List(sub)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: open database: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if current > migrations.Latest(ms) {
		return fmt.Errorf("sqlite: database schema version %d is newer than this binary knows (%d); upgrade certorder",
			current, migrations.Latest(ms))
	}
	for _, m := range ms {
		if m.Version <= current {
			continue
		}
		err := inTx(ctx, db, func(tx *sql.Tx) error {
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

// Close closes the database.
func (s *Store) Close() error {
	var errs []error
	for _, db := range []*sql.DB{s.read, s.audit, s.write} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.read.PingContext(ctx); err != nil {
		return fmt.Errorf("%w: %v", certorder.ErrUnavailable, err)
	}
	return nil
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

func inTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
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

// wrap turns a driver error into a store error; domain errors pass through.
func wrap(op string, err error) error {
	var se *sqlite.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%s: %w", op, certorder.ErrConflict)
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("%s: %w: %v", op, certorder.ErrUnavailable, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// AddMember creates a member.
func (s *Store) AddMember(ctx context.Context, name string) (certorder.Member, error) {
	if err := certorder.ValidMemberName(name); err != nil {
		return certorder.Member{}, err
	}
	m := certorder.Member{Name: name, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	res, err := s.write.ExecContext(ctx, `INSERT INTO members (name, created_at) VALUES (?, ?)`,
		name, formatTime(m.CreatedAt))
	if err != nil {
		return certorder.Member{}, wrap("add member "+name, err)
	}
	m.ID, err = res.LastInsertId()
	return m, wrap("add member", err)
}

// Members lists every member by name.
func (s *Store) Members(ctx context.Context) ([]certorder.Member, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id, name, disabled, created_at FROM members ORDER BY name`)
	if err != nil {
		return nil, wrap("list members", err)
	}
	defer rows.Close()
	var ms []certorder.Member
	for rows.Next() {
		var m certorder.Member
		var created sql.NullString
		if err := rows.Scan(&m.ID, &m.Name, &m.Disabled, &created); err != nil {
			return nil, wrap("list members", err)
		}
		m.CreatedAt = parseTime(created)
		ms = append(ms, m)
	}
	return ms, wrap("list members", rows.Err())
}

// SetMemberDisabled disables or re-enables a member.
func (s *Store) SetMemberDisabled(ctx context.Context, name string, disabled bool) error {
	res, err := s.write.ExecContext(ctx, `UPDATE members SET disabled = ? WHERE name = ?`, disabled, name)
	return wrap("set member "+name, oneRow(res, err, "member "+name))
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

func (s *Store) memberID(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, name string) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM members WHERE name = ?`, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: member %s", certorder.ErrNotFound, name)
	}
	return id, err
}

// AddKey stores a new key for a member.
func (s *Store) AddKey(ctx context.Context, member string, k certorder.Key) error {
	return wrap("add key", inTx(ctx, s.write, func(tx *sql.Tx) error {
		mid, err := s.memberID(ctx, tx, member)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO api_keys (id, member_id, label, hash, created_at) VALUES (?, ?, ?, ?, ?)`,
			k.ID, mid, k.Label, k.Hash, now())
		return err
	}))
}

// Keys lists a member's keys, oldest first.
func (s *Store) Keys(ctx context.Context, member string) ([]certorder.Key, error) {
	mid, err := s.memberID(ctx, s.read, member)
	if err != nil {
		return nil, wrap("list keys", err)
	}
	rows, err := s.read.QueryContext(ctx, `SELECT id, label, hash, created_at, revoked_at
		FROM api_keys WHERE member_id = ? ORDER BY created_at, id`, mid)
	if err != nil {
		return nil, wrap("list keys", err)
	}
	defer rows.Close()
	var ks []certorder.Key
	for rows.Next() {
		k := certorder.Key{Member: member}
		var created, revoked sql.NullString
		if err := rows.Scan(&k.ID, &k.Label, &k.Hash, &created, &revoked); err != nil {
			return nil, wrap("list keys", err)
		}
		k.CreatedAt, k.RevokedAt = parseTime(created), parseTime(revoked)
		ks = append(ks, k)
	}
	return ks, wrap("list keys", rows.Err())
}

// RevokeKey revokes a key; the first revocation time is kept.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	res, err := s.write.ExecContext(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, now(), id)
	return wrap("revoke key", oneRow(res, err, "key "+id))
}

// FindCredential returns a key, its member and an order, in one query.
func (s *Store) FindCredential(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error) {
	var c certorder.Credential
	var o certorder.Order
	var id, memberID, certEnd sql.NullInt64
	var commonName, status, validTill sql.NullString
	stmt, args := s.findCredentialOrder, []any{orderID, keyID}
	if orderID == 0 {
		stmt, args = s.findCredential, []any{keyID}
	}
	err := stmt.QueryRowContext(ctx, args...).Scan(&c.KeyID, &c.KeyHash, &c.KeyRevoked,
		&c.MemberID, &c.Member, &c.MemberDisabled,
		&id, &memberID, &commonName, &status, &validTill, &o.RenewedBy, &o.Doc, &certEnd)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil, fmt.Errorf("%w: key %s", certorder.ErrNotFound, keyID)
	}
	if err != nil {
		return c, nil, wrap("find credential", err)
	}
	if !id.Valid {
		return c, nil, nil
	}
	o.ID, o.MemberID, o.CertEnd = id.Int64, memberID.Int64, int(certEnd.Int64)
	o.CommonName, o.Status, o.ValidTill = commonName.String, status.String, validTill.String
	if o.MemberID == c.MemberID {
		o.Member = c.Member
	}
	return c, &o, nil
}

// FindOrder returns one order.
func (s *Store) FindOrder(ctx context.Context, id int64) (*certorder.Order, error) {
	o := &certorder.Order{}
	err := s.findOrder.QueryRowContext(ctx, id).Scan(&o.ID, &o.MemberID, &o.Member, &o.CommonName,
		&o.Status, &o.ValidTill, &o.RenewedBy, &o.Doc, &o.CertEnd)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
	}
	if err != nil {
		return nil, wrap("find order", err)
	}
	return o, nil
}

// Orders lists a member's orders by number.
func (s *Store) Orders(ctx context.Context, member string) ([]*certorder.Order, error) {
	mid, err := s.memberID(ctx, s.read, member)
	if err != nil {
		return nil, wrap("list orders", err)
	}
	rows, err := s.read.QueryContext(ctx, `SELECT id, member_id, common_name, status, valid_till,
		COALESCE(renewed_by, 0), doc, cert_end FROM orders WHERE member_id = ? ORDER BY id`, mid)
	if err != nil {
		return nil, wrap("list orders", err)
	}
	defer rows.Close()
	var os []*certorder.Order
	for rows.Next() {
		o := &certorder.Order{Member: member}
		if err := rows.Scan(&o.ID, &o.MemberID, &o.CommonName, &o.Status, &o.ValidTill,
			&o.RenewedBy, &o.Doc, &o.CertEnd); err != nil {
			return nil, wrap("list orders", err)
		}
		os = append(os, o)
	}
	return os, wrap("list orders", rows.Err())
}

// linkLookup reads an order's owner and renewal inside tx, for certorder.CheckRenewal.
func linkLookup(stmt *sql.Stmt) func(context.Context, int64) (certorder.OrderLink, error) {
	return func(ctx context.Context, id int64) (certorder.OrderLink, error) {
		var l certorder.OrderLink
		err := stmt.QueryRowContext(ctx, id).Scan(&l.MemberID, &l.RenewedBy)
		if errors.Is(err, sql.ErrNoRows) {
			return l, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
		}
		return l, err
	}
}

const selectLink = `SELECT member_id, COALESCE(renewed_by, 0) FROM orders WHERE id = ?`

// RecordRenewal records that newID renewed oldID. Both must be stored.
func (s *Store) RecordRenewal(ctx context.Context, oldID, newID int64) error {
	return wrap("record renewal", inTx(ctx, s.write, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, selectLink)
		if err != nil {
			return err
		}
		defer stmt.Close()
		changed, err := certorder.CheckRecordRenewal(ctx, oldID, newID, linkLookup(stmt))
		if err != nil || !changed {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE orders SET renewed_by = ?, updated_at = ? WHERE id = ?`, newID, now(), oldID)
		return err
	}))
}

// ImportOrders stores orders for a member, all or none.
func (s *Store) ImportOrders(ctx context.Context, member string, orders iter.Seq2[*certorder.Order, error]) (int, error) {
	n := 0
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		mid, err := s.memberID(ctx, tx, member)
		if err != nil {
			return err
		}
		link, err := tx.PrepareContext(ctx, selectLink)
		if err != nil {
			return err
		}
		defer link.Close()
		fromOther, err := tx.PrepareContext(ctx,
			`SELECT id FROM orders WHERE renewed_by = ? AND member_id <> ? LIMIT 1`)
		if err != nil {
			return err
		}
		defer fromOther.Close()
		renewedFromOther := func(ctx context.Context, id int64) (int64, error) {
			var other int64
			err := fromOther.QueryRowContext(ctx, id, mid).Scan(&other)
			if errors.Is(err, sql.ErrNoRows) {
				return 0, nil
			}
			return other, err
		}
		upsert, err := tx.PrepareContext(ctx, `INSERT INTO orders
			(id, member_id, common_name, status, valid_till, renewed_by, doc, cert_end, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET common_name = excluded.common_name, status = excluded.status,
			valid_till = excluded.valid_till, renewed_by = excluded.renewed_by, doc = excluded.doc,
			cert_end = excluded.cert_end, updated_at = excluded.updated_at`)
		if err != nil {
			return err
		}
		defer upsert.Close()
		lookup := linkLookup(link)
		stamp := now()
		for o, err := range orders {
			if err != nil {
				return err
			}
			renewedBy, err := certorder.CheckImport(ctx, mid, o, lookup, renewedFromOther)
			if err != nil {
				return err
			}
			if _, err := upsert.ExecContext(ctx, o.ID, mid, o.CommonName, o.Status, o.ValidTill,
				sql.NullInt64{Int64: renewedBy, Valid: renewedBy != 0}, o.Doc, o.CertEnd, stamp); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, wrap("import orders", err)
	}
	return n, nil
}

// Restore loads an export into the empty store.
func (s *Store) Restore(ctx context.Context, records iter.Seq2[certorder.Record, error]) error {
	return wrap("restore", inTx(ctx, s.write, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM members) + (SELECT COUNT(*) FROM orders)`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: the store is not empty", certorder.ErrConflict)
		}
		return certorder.Restorer{
			Member: func(m *certorder.Member) (int64, error) {
				res, err := tx.ExecContext(ctx, `INSERT INTO members (name, disabled, created_at) VALUES (?, ?, ?)`,
					m.Name, m.Disabled, stampOrNow(m.CreatedAt))
				if err != nil {
					return 0, err
				}
				return res.LastInsertId()
			},
			Key: func(k *certorder.Key, memberID int64) error {
				revoked := sql.NullString{String: formatTime(k.RevokedAt), Valid: k.Revoked()}
				_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, member_id, label, hash, created_at, revoked_at)
					VALUES (?, ?, ?, ?, ?, ?)`, k.ID, memberID, k.Label, k.Hash, stampOrNow(k.CreatedAt), revoked)
				return err
			},
			Order: func(o *certorder.Order, memberID int64) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO orders
					(id, member_id, common_name, status, valid_till, renewed_by, doc, cert_end, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, o.ID, memberID, o.CommonName, o.Status, o.ValidTill,
					sql.NullInt64{Int64: o.RenewedBy, Valid: o.RenewedBy != 0}, o.Doc, o.CertEnd, now())
				return err
			},
		}.Run(records)
	}))
}

func stampOrNow(t time.Time) string {
	if t.IsZero() {
		return now()
	}
	return formatTime(t)
}

// AppendAudit adds entries to the audit trail, in one transaction.
func (s *Store) AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error {
	return wrap("append audit", inTx(ctx, s.audit, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO audit_log (at, member, action, order_id, outcome, client_ip)
			VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, e := range entries {
			e = e.Trimmed()
			if _, err := stmt.ExecContext(ctx, formatTime(e.Time), e.Member, e.Action, e.OrderID, int(e.Outcome), e.ClientIP); err != nil {
				return err
			}
		}
		return nil
	}))
}

// Audit lists audit entries, newest first.
func (s *Store) Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.audit.QueryContext(ctx, `SELECT at, member, action, order_id, outcome, client_ip FROM audit_log
		WHERE (? = '' OR member = ?) AND at >= ? ORDER BY at DESC, id DESC LIMIT ?`,
		q.Member, q.Member, formatTime(q.Since), limit)
	if err != nil {
		return nil, wrap("audit", err)
	}
	defer rows.Close()
	var es []certorder.AuditEntry
	for rows.Next() {
		var e certorder.AuditEntry
		var at sql.NullString
		if err := rows.Scan(&at, &e.Member, &e.Action, &e.OrderID, &e.Outcome, &e.ClientIP); err != nil {
			return nil, wrap("audit", err)
		}
		e.Time = parseTime(at)
		es = append(es, e)
	}
	return es, wrap("audit", rows.Err())
}

// PruneAudit deletes entries older than before.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.audit.ExecContext(ctx, `DELETE FROM audit_log WHERE at < ?`, formatTime(before))
	if err != nil {
		return 0, wrap("prune audit", err)
	}
	n, err := res.RowsAffected()
	return n, wrap("prune audit", err)
}

// AddSession stores a web session.
func (s *Store) AddSession(ctx context.Context, se certorder.Session) error {
	_, err := s.write.ExecContext(ctx, `INSERT INTO sessions (token_hash, member_id, key_id, csrf, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`, se.TokenHash, se.MemberID, se.KeyID, se.CSRF, formatTime(se.Created), formatTime(se.Expires))
	return wrap("add session", err)
}

// FindSession returns a session with its key's and member's state.
func (s *Store) FindSession(ctx context.Context, tokenHash []byte) (certorder.Session, error) {
	se := certorder.Session{TokenHash: tokenHash}
	var created, expires sql.NullString
	err := s.read.QueryRowContext(ctx, `SELECT s.member_id, m.name, s.key_id, s.csrf, s.created_at, s.expires_at,
		k.revoked_at IS NOT NULL, m.disabled
		FROM sessions s JOIN members m ON m.id = s.member_id JOIN api_keys k ON k.id = s.key_id
		WHERE s.token_hash = ?`, tokenHash).Scan(&se.MemberID, &se.Member, &se.KeyID, &se.CSRF, &created, &expires,
		&se.KeyRevoked, &se.MemberDisabled)
	if errors.Is(err, sql.ErrNoRows) {
		return se, fmt.Errorf("%w: session", certorder.ErrNotFound)
	}
	se.Created, se.Expires = parseTime(created), parseTime(expires)
	return se, wrap("find session", err)
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, tokenHash []byte) error {
	_, err := s.write.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash = ?`, tokenHash)
	return wrap("delete session", err)
}

// PruneSessions deletes expired sessions.
func (s *Store) PruneSessions(ctx context.Context, now time.Time) error {
	_, err := s.write.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at < ?`, formatTime(now))
	return wrap("prune sessions", err)
}
