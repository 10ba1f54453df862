package storekit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certorder/certorder"
)

// Kit is what both stores do alike over their databases (DB): each store
// embeds one, so that its methods are the store's, written once. What a
// dialect writes its own way (RETURNING, ON CONFLICT with arrays, SKIP
// LOCKED, the hot path's prepared reads) stays the store's.
type Kit struct {
	Read     TxDB // reads outside a transaction
	Write    TxDB // writes, and their transactions
	Sessions TxDB // the web sessions' table (SQLite: a file of its own)
	// Wrap turns a driver error into a store error (the store's rule).
	Wrap func(op string, err error) error
}

// oneRow turns a statement that touched no row into ErrNotFound.
func oneRow(n int64, err error, what string) error {
	if err == nil && n == 0 {
		return fmt.Errorf("%w: %s", certorder.ErrNotFound, what)
	}
	return err
}

// notFound turns ErrNoRows into ErrNotFound, with what.
func notFound(err error, what string) error {
	if errors.Is(err, ErrNoRows) {
		return fmt.Errorf("%w: %s", certorder.ErrNotFound, what)
	}
	return err
}

// AddSession stores a web session.
func (k *Kit) AddSession(ctx context.Context, se certorder.Session) error {
	_, err := k.Sessions.Exec(ctx, `INSERT INTO sessions (token_hash, member_id, key_id, csrf, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`, se.TokenHash, se.MemberID, se.KeyID, se.CSRF, se.Created, se.Expires)
	return k.Wrap("add session", err)
}

// DeleteSession ends a session.
func (k *Kit) DeleteSession(ctx context.Context, tokenHash []byte) error {
	_, err := k.Sessions.Exec(ctx, `DELETE FROM sessions WHERE token_hash = ?`, tokenHash)
	return k.Wrap("delete session", err)
}

// memberColumns are the columns scanMember reads.
const memberColumns = `id, name, disabled, created_at, self_service_keys_off`

func scanMember(row Row) (certorder.Member, error) {
	var m certorder.Member
	var created Time
	err := row.Scan(&m.ID, &m.Name, &m.Disabled, &created, &m.SelfServiceKeysOff)
	m.CreatedAt = created.T
	return m, err
}

// FindMember returns the member with the name.
func (k *Kit) FindMember(ctx context.Context, name string) (certorder.Member, error) {
	m, err := scanMember(k.Read.QueryRow(ctx, `SELECT `+memberColumns+` FROM members WHERE name = ?`, name))
	return m, k.Wrap("find member", notFound(err, "member "+name))
}

// Members lists every member by name.
func (k *Kit) Members(ctx context.Context) ([]certorder.Member, error) {
	ms, err := Query(ctx, k.Read, scanMember, `SELECT `+memberColumns+` FROM members ORDER BY name`)
	return ms, k.Wrap("list members", err)
}

// SetSelfServiceKeys allows or forbids the member's self-service keys.
func (k *Kit) SetSelfServiceKeys(ctx context.Context, name string, allowed bool) error {
	n, err := k.Write.Exec(ctx, `UPDATE members SET self_service_keys_off = ? WHERE name = ?`, !allowed, name)
	return k.Wrap("set member "+name, oneRow(n, err, "member "+name))
}

// MemberID is the ID of the member with the name, read in db.
func MemberID(ctx context.Context, db DB, name string) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, `SELECT id FROM members WHERE name = ?`, name).Scan(&id)
	return id, notFound(err, "member "+name)
}

// PruneSessions deletes expired sessions.
func (k *Kit) PruneSessions(ctx context.Context, now time.Time) error {
	_, err := k.Sessions.Exec(ctx, `DELETE FROM sessions WHERE expires_at < ?`, now)
	return k.Wrap("prune sessions", err)
}
