package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/certorder/certorder"
)

// FindSession returns a session with its key's and member's state: the
// session from the sessions' file, the state from the store's, in a
// second read (the files cannot be joined without attaching one to the
// other on every connection).
func (s *Store) FindSession(ctx context.Context, tokenHash []byte) (certorder.Session, error) {
	se := certorder.Session{TokenHash: tokenHash}
	var created, expires sql.NullString
	err := s.sessions.QueryRowContext(ctx, `SELECT member_id, key_id, csrf, created_at, expires_at
		FROM sessions WHERE token_hash = ?`, tokenHash).Scan(&se.MemberID, &se.KeyID, &se.CSRF, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return se, fmt.Errorf("%w: session", certorder.ErrNotFound)
	}
	if err != nil {
		return se, s.wrap("find session", err)
	}
	se.Created, se.Expires = parseTime(created), parseTime(expires)
	err = s.read.QueryRowContext(ctx, `SELECT m.name, m.disabled, m.self_service_keys_off, k.revoked_at IS NOT NULL
		FROM members m JOIN api_keys k ON k.member_id = m.id WHERE m.id = ? AND k.id = ?`, se.MemberID, se.KeyID).
		Scan(&se.Member, &se.MemberDisabled, &se.SelfServiceKeysOff, &se.KeyRevoked)
	if errors.Is(err, sql.ErrNoRows) {
		// The key is not the member's, or either is gone: no session.
		return se, fmt.Errorf("%w: session", certorder.ErrNotFound)
	}
	return se, s.wrap("find session", err)
}

// endSessions deletes every session of a member.
func (s *Store) endSessions(ctx context.Context, memberID int64) error {
	_, err := s.sessions.ExecContext(ctx, `DELETE FROM sessions WHERE member_id = ?`, memberID)
	return err
}
