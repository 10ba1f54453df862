package storekit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certorder/certorder"
)

// AddSession stores a web session.
func (k *Kit) AddSession(ctx context.Context, se certorder.Session) error {
	_, err := k.Sessions.Exec(ctx, `INSERT INTO sessions (token_hash, member_id, key_id, csrf, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`, se.TokenHash, se.MemberID, se.KeyID, se.CSRF, se.Created, se.Expires)
	return k.Wrap("add session", err)
}

// FindSession returns a session with its key's and member's state, in one
// read; where the sessions are apart (SessionsApart), the session from
// their database and the state from the store's in a second read (SQLite's
// files cannot be joined without attaching one to the other on every
// connection).
func (k *Kit) FindSession(ctx context.Context, tokenHash []byte) (certorder.Session, error) {
	se := certorder.Session{TokenHash: tokenHash}
	var created, expires Time
	var err error
	if !k.SessionsApart {
		err = k.Read.QueryRow(ctx, `SELECT s.member_id, s.key_id, s.csrf, s.created_at, s.expires_at,
			m.name, m.disabled, m.self_service_keys_off, k.revoked_at IS NOT NULL
			FROM sessions s JOIN members m ON m.id = s.member_id JOIN api_keys k ON k.id = s.key_id AND k.member_id = s.member_id
			WHERE s.token_hash = ?`, tokenHash).Scan(&se.MemberID, &se.KeyID, &se.CSRF, &created, &expires,
			&se.Member, &se.MemberDisabled, &se.SelfServiceKeysOff, &se.KeyRevoked)
	} else {
		err = k.Sessions.QueryRow(ctx, `SELECT member_id, key_id, csrf, created_at, expires_at
			FROM sessions WHERE token_hash = ?`, tokenHash).Scan(&se.MemberID, &se.KeyID, &se.CSRF, &created, &expires)
		if err == nil {
			// The key is not the member's, or either is gone: no session.
			err = k.Read.QueryRow(ctx, `SELECT m.name, m.disabled, m.self_service_keys_off, k.revoked_at IS NOT NULL
				FROM members m JOIN api_keys k ON k.member_id = m.id WHERE m.id = ? AND k.id = ?`, se.MemberID, se.KeyID).
				Scan(&se.Member, &se.MemberDisabled, &se.SelfServiceKeysOff, &se.KeyRevoked)
		}
	}
	se.Created, se.Expires = created.T, expires.T
	if errors.Is(err, ErrNoRows) {
		return se, fmt.Errorf("%w: session", certorder.ErrNotFound)
	}
	return se, k.Wrap("find session", err)
}

// DeleteSession ends a session.
func (k *Kit) DeleteSession(ctx context.Context, tokenHash []byte) error {
	_, err := k.Sessions.Exec(ctx, `DELETE FROM sessions WHERE token_hash = ?`, tokenHash)
	return k.Wrap("delete session", err)
}

// PruneSessions deletes expired sessions.
func (k *Kit) PruneSessions(ctx context.Context, now time.Time) error {
	_, err := k.Sessions.Exec(ctx, `DELETE FROM sessions WHERE expires_at < ?`, now)
	return k.Wrap("prune sessions", err)
}

// EndSessions deletes every session of a member, in db (the sessions'
// database, or a transaction of it).
func EndSessions(ctx context.Context, db DB, memberID int64) error {
	_, err := db.Exec(ctx, `DELETE FROM sessions WHERE member_id = ?`, memberID)
	return err
}
