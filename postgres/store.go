// Package postgres is the certorder.Store for several instances sharing one
// database: PostgreSQL through pgx v5 and its pool.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

var _ certorder.Store = (*Store)(nil)

// Store is a certorder.Store on PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
}

// Lock keys for pg_advisory_xact_lock: one serialises migrations across
// instances starting at once, the other serialises writes to the renewal
// relation so that two imports cannot build a cycle between them.
const (
	lockMigrations int64 = 0x63657274_0001 // "cert" 1
	lockRenewals   int64 = 0x63657274_0002
)

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
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool}
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
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockMigrations); err != nil {
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
		if current > migrations.Latest(ms) {
			return fmt.Errorf("database schema version %d is newer than this binary knows (%d); upgrade certorder",
				current, migrations.Latest(ms))
		}
		for _, m := range ms {
			if m.Version <= current {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, now())`, m.Version); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("postgres: migrate", err)
}

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return wrap("ping", s.pool.Ping(ctx))
}

func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// wrap turns a driver error into a store error: a unique violation is a
// conflict, an error the server reported is internal, and anything else
// (refused, reset, timed out, pool closed) means the database is unavailable.
func wrap(op string, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, certorder.ErrNotFound), errors.Is(err, certorder.ErrConflict),
		errors.Is(err, certorder.ErrInvalid), errors.Is(err, certorder.ErrUnavailable),
		errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", op, err)
	case errors.As(err, &pgErr):
		if pgErr.Code == "23505" { // unique_violation
			return fmt.Errorf("%s: %w", op, certorder.ErrConflict)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %v", op, certorder.ErrUnavailable, err)
}

// AddMember creates a member.
func (s *Store) AddMember(ctx context.Context, name string) (certorder.Member, error) {
	if err := certorder.ValidMemberName(name); err != nil {
		return certorder.Member{}, err
	}
	m := certorder.Member{Name: name}
	err := s.pool.QueryRow(ctx, `INSERT INTO members (name, created_at) VALUES ($1, now()) RETURNING id, created_at`,
		name).Scan(&m.ID, &m.CreatedAt)
	return m, wrap("add member "+name, err)
}

// Members lists every member by name.
func (s *Store) Members(ctx context.Context) ([]certorder.Member, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, name, disabled, created_at FROM members ORDER BY name`)
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Member, error) {
		var m certorder.Member
		err := row.Scan(&m.ID, &m.Name, &m.Disabled, &m.CreatedAt)
		return m, err
	})
	return ms, wrap("list members", err)
}

// SetMemberDisabled disables or re-enables a member.
func (s *Store) SetMemberDisabled(ctx context.Context, name string, disabled bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE members SET disabled = $1 WHERE name = $2`, disabled, name)
	return wrap("set member "+name, oneRow(tag, err, "member "+name))
}

func oneRow(tag pgconn.CommandTag, err error, what string) error {
	if err == nil && tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", certorder.ErrNotFound, what)
	}
	return err
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func memberID(ctx context.Context, q querier, name string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `SELECT id FROM members WHERE name = $1`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: member %s", certorder.ErrNotFound, name)
	}
	return id, err
}

// AddKey stores a new key for a member.
func (s *Store) AddKey(ctx context.Context, member string, k certorder.Key) error {
	return wrap("add key", s.inTx(ctx, func(tx pgx.Tx) error {
		mid, err := memberID(ctx, tx, member)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO api_keys (id, member_id, label, hash, created_at) VALUES ($1, $2, $3, $4, now())`,
			k.ID, mid, k.Label, k.Hash)
		return err
	}))
}

// Keys lists a member's keys, oldest first.
func (s *Store) Keys(ctx context.Context, member string) ([]certorder.Key, error) {
	mid, err := memberID(ctx, s.pool, member)
	if err != nil {
		return nil, wrap("list keys", err)
	}
	rows, _ := s.pool.Query(ctx, `SELECT id, label, hash, created_at, revoked_at
		FROM api_keys WHERE member_id = $1 ORDER BY created_at, id`, mid)
	ks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Key, error) {
		k := certorder.Key{Member: member}
		var revoked *time.Time
		err := row.Scan(&k.ID, &k.Label, &k.Hash, &k.CreatedAt, &revoked)
		if revoked != nil {
			k.RevokedAt = *revoked
		}
		return k, err
	})
	return ks, wrap("list keys", err)
}

// RevokeKey revokes a key; the first revocation time is kept.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1`, id)
	return wrap("revoke key", oneRow(tag, err, "key "+id))
}

// FindCredential returns a key, its member and an order, in one query.
func (s *Store) FindCredential(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error) {
	var c certorder.Credential
	var o certorder.Order
	var id, memberID *int64
	var certEnd *int
	var commonName, status, validTill *string
	err := s.pool.QueryRow(ctx, `SELECT k.id, k.hash, k.revoked_at IS NOT NULL, m.id, m.name, m.disabled,
		o.id, o.member_id, o.common_name, o.status, o.valid_till, COALESCE(o.renewed_by, 0), o.doc, o.cert_end
		FROM api_keys k JOIN members m ON m.id = k.member_id LEFT JOIN orders o ON o.id = $2
		WHERE k.id = $1`, keyID, orderID).
		Scan(&c.KeyID, &c.KeyHash, &c.KeyRevoked, &c.MemberID, &c.Member, &c.MemberDisabled,
			&id, &memberID, &commonName, &status, &validTill, &o.RenewedBy, &o.Doc, &certEnd)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil, fmt.Errorf("%w: key %s", certorder.ErrNotFound, keyID)
	}
	if err != nil {
		return c, nil, wrap("find credential", err)
	}
	if id == nil {
		return c, nil, nil
	}
	o.ID, o.MemberID, o.CertEnd = *id, *memberID, *certEnd
	o.CommonName, o.Status, o.ValidTill = *commonName, *status, *validTill
	if o.MemberID == c.MemberID {
		o.Member = c.Member
	}
	return c, &o, nil
}

// FindOrder returns one order.
func (s *Store) FindOrder(ctx context.Context, id int64) (*certorder.Order, error) {
	o := &certorder.Order{}
	err := s.pool.QueryRow(ctx, `SELECT o.id, o.member_id, m.name, o.common_name, o.status, o.valid_till,
		COALESCE(o.renewed_by, 0), o.doc, o.cert_end FROM orders o JOIN members m ON m.id = o.member_id WHERE o.id = $1`, id).
		Scan(&o.ID, &o.MemberID, &o.Member, &o.CommonName, &o.Status, &o.ValidTill, &o.RenewedBy, &o.Doc, &o.CertEnd)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
	}
	if err != nil {
		return nil, wrap("find order", err)
	}
	return o, nil
}

// Orders lists a member's orders by number.
func (s *Store) Orders(ctx context.Context, member string) ([]*certorder.Order, error) {
	mid, err := memberID(ctx, s.pool, member)
	if err != nil {
		return nil, wrap("list orders", err)
	}
	rows, _ := s.pool.Query(ctx, `SELECT id, member_id, common_name, status, valid_till, COALESCE(renewed_by, 0),
		doc, cert_end FROM orders WHERE member_id = $1 ORDER BY id`, mid)
	os, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*certorder.Order, error) {
		o := &certorder.Order{Member: member}
		err := row.Scan(&o.ID, &o.MemberID, &o.CommonName, &o.Status, &o.ValidTill, &o.RenewedBy, &o.Doc, &o.CertEnd)
		return o, err
	})
	return os, wrap("list orders", err)
}

// linkLookup reads an order's owner and renewal inside tx, for certorder.CheckRenewal.
func linkLookup(tx pgx.Tx) func(context.Context, int64) (certorder.OrderLink, error) {
	return func(ctx context.Context, id int64) (certorder.OrderLink, error) {
		var l certorder.OrderLink
		err := tx.QueryRow(ctx, `SELECT member_id, COALESCE(renewed_by, 0) FROM orders WHERE id = $1`, id).
			Scan(&l.MemberID, &l.RenewedBy)
		if errors.Is(err, pgx.ErrNoRows) {
			return l, fmt.Errorf("%w: order %d", certorder.ErrNotFound, id)
		}
		return l, err
	}
}

// RecordRenewal records that newID renewed oldID. Both must be stored.
func (s *Store) RecordRenewal(ctx context.Context, oldID, newID int64) error {
	return wrap("record renewal", s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockRenewals); err != nil {
			return err
		}
		changed, err := certorder.CheckRecordRenewal(ctx, oldID, newID, linkLookup(tx))
		if err != nil || !changed {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE orders SET renewed_by = $1, updated_at = now() WHERE id = $2`, newID, oldID)
		return err
	}))
}

// ImportOrders stores orders for a member, all or none.
func (s *Store) ImportOrders(ctx context.Context, member string, orders iter.Seq2[*certorder.Order, error]) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockRenewals); err != nil {
			return err
		}
		mid, err := memberID(ctx, tx, member)
		if err != nil {
			return err
		}
		lookup := linkLookup(tx)
		renewedFromOther := func(ctx context.Context, id int64) (int64, error) {
			var other int64
			err := tx.QueryRow(ctx, `SELECT id FROM orders WHERE renewed_by = $1 AND member_id <> $2 LIMIT 1`, id, mid).Scan(&other)
			if errors.Is(err, pgx.ErrNoRows) {
				return 0, nil
			}
			return other, err
		}
		for o, err := range orders {
			if err != nil {
				return err
			}
			renewedBy, err := certorder.CheckImport(ctx, mid, o, lookup, renewedFromOther)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO orders
				(id, member_id, common_name, status, valid_till, renewed_by, doc, cert_end, updated_at)
				VALUES ($1, $2, $3, $4, $5, NULLIF($6::BIGINT, 0), $7, $8, now())
				ON CONFLICT (id) DO UPDATE SET common_name = excluded.common_name, status = excluded.status,
				valid_till = excluded.valid_till, renewed_by = excluded.renewed_by, doc = excluded.doc,
				cert_end = excluded.cert_end, updated_at = excluded.updated_at`,
				o.ID, mid, o.CommonName, o.Status, o.ValidTill, renewedBy, o.Doc, o.CertEnd); err != nil {
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
	return wrap("restore", s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockRenewals); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM members) + (SELECT COUNT(*) FROM orders)`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: the store is not empty", certorder.ErrConflict)
		}
		return certorder.Restorer{
			Member: func(m *certorder.Member) (int64, error) {
				var id int64
				err := tx.QueryRow(ctx, `INSERT INTO members (name, disabled, created_at)
					VALUES ($1, $2, COALESCE($3, now())) RETURNING id`, m.Name, m.Disabled, nullTime(m.CreatedAt)).Scan(&id)
				return id, err
			},
			Key: func(k *certorder.Key, memberID int64) error {
				_, err := tx.Exec(ctx, `INSERT INTO api_keys (id, member_id, label, hash, created_at, revoked_at)
					VALUES ($1, $2, $3, $4, COALESCE($5, now()), $6)`,
					k.ID, memberID, k.Label, k.Hash, nullTime(k.CreatedAt), nullTime(k.RevokedAt))
				return err
			},
			Order: func(o *certorder.Order, memberID int64) error {
				_, err := tx.Exec(ctx, `INSERT INTO orders
					(id, member_id, common_name, status, valid_till, renewed_by, doc, cert_end, updated_at)
					VALUES ($1, $2, $3, $4, $5, NULLIF($6::BIGINT, 0), $7, $8, now())`,
					o.ID, memberID, o.CommonName, o.Status, o.ValidTill, o.RenewedBy, o.Doc, o.CertEnd)
				return err
			},
		}.Run(records)
	}))
}

// nullTime is NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// AppendAudit adds entries to the audit trail, in one round trip.
func (s *Store) AppendAudit(ctx context.Context, entries []certorder.AuditEntry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		e = e.Trimmed()
		rows[i] = []any{e.Time, e.Member, e.Action, e.OrderID, int(e.Outcome), e.ClientIP}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"audit_log"},
		[]string{"at", "member", "action", "order_id", "outcome", "client_ip"}, pgx.CopyFromRows(rows))
	return wrap("append audit", err)
}

// Audit lists audit entries, newest first.
func (s *Store) Audit(ctx context.Context, q certorder.AuditQuery) ([]certorder.AuditEntry, error) {
	var limit *int
	if q.Limit > 0 {
		limit = &q.Limit
	}
	rows, _ := s.pool.Query(ctx, `SELECT at, member, action, order_id, outcome, client_ip FROM audit_log
		WHERE ($1 = '' OR member = $1) AND at >= $2 ORDER BY at DESC, id DESC LIMIT $3`, q.Member, q.Since, limit)
	es, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.AuditEntry, error) {
		var e certorder.AuditEntry
		err := row.Scan(&e.Time, &e.Member, &e.Action, &e.OrderID, &e.Outcome, &e.ClientIP)
		return e, err
	})
	return es, wrap("audit", err)
}

// PruneAudit deletes entries older than before.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM audit_log WHERE at < $1`, before)
	return tag.RowsAffected(), wrap("prune audit", err)
}

// AddSession stores a web session.
func (s *Store) AddSession(ctx context.Context, se certorder.Session) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (token_hash, member_id, key_id, csrf, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, se.TokenHash, se.MemberID, se.KeyID, se.CSRF, se.Created, se.Expires)
	return wrap("add session", err)
}

// FindSession returns a session with its key's and member's state.
func (s *Store) FindSession(ctx context.Context, tokenHash []byte) (certorder.Session, error) {
	se := certorder.Session{TokenHash: tokenHash}
	err := s.pool.QueryRow(ctx, `SELECT s.member_id, m.name, s.key_id, s.csrf, s.created_at, s.expires_at,
		k.revoked_at IS NOT NULL, m.disabled
		FROM sessions s JOIN members m ON m.id = s.member_id JOIN api_keys k ON k.id = s.key_id
		WHERE s.token_hash = $1`, tokenHash).Scan(&se.MemberID, &se.Member, &se.KeyID, &se.CSRF, &se.Created, &se.Expires,
		&se.KeyRevoked, &se.MemberDisabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return se, fmt.Errorf("%w: session", certorder.ErrNotFound)
	}
	return se, wrap("find session", err)
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, tokenHash []byte) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, tokenHash)
	return wrap("delete session", err)
}

// PruneSessions deletes expired sessions.
func (s *Store) PruneSessions(ctx context.Context, now time.Time) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE expires_at < $1`, now)
	return wrap("prune sessions", err)
}
