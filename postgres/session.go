package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
)

// FindSession returns a session with its key's and member's state.
func (s *Store) FindSession(ctx context.Context, tokenHash []byte) (certorder.Session, error) {
	se := certorder.Session{TokenHash: tokenHash}
	err := s.pool.QueryRow(ctx, `SELECT s.member_id, m.name, s.key_id, s.csrf, s.created_at, s.expires_at,
		k.revoked_at IS NOT NULL, m.disabled, m.self_service_keys_off
		FROM sessions s JOIN members m ON m.id = s.member_id JOIN api_keys k ON k.id = s.key_id AND k.member_id = s.member_id
		WHERE s.token_hash = $1`, tokenHash).Scan(&se.MemberID, &se.Member, &se.KeyID, &se.CSRF, &se.Created, &se.Expires,
		&se.KeyRevoked, &se.MemberDisabled, &se.SelfServiceKeysOff)
	if errors.Is(err, pgx.ErrNoRows) {
		return se, fmt.Errorf("%w: session", certorder.ErrNotFound)
	}
	return se, s.wrap("find session", err)
}
