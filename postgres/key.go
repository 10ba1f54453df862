package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// FindCredential reads a key, its member and the member's order, in one
// query (the cache in front of the store is credcache.Store's). The order is joined only if it is the key's member's: another
// member's order is never read, so it costs what a missing one does.
func (s *Store) FindCredential(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error) {
	var c certorder.Credential
	var o storekit.OrderRow
	err := s.read(ctx, func() error {
		c, o = certorder.Credential{}, storekit.OrderRow{} // nothing of a first attempt cut short
		return s.pool.QueryRow(ctx, `SELECT k.id, k.hash, k.revoked_at IS NOT NULL, m.id, m.name, m.disabled, `+storekit.OrderColumns+`
			FROM api_keys k JOIN members m ON m.id = k.member_id
			LEFT JOIN orders o ON o.id = $2 AND o.member_id = k.member_id
			WHERE k.id = $1`, keyID, orderID).
			Scan(append([]any{&c.KeyID, &c.KeyHash, &c.KeyRevoked, &c.MemberID, &c.Member, &c.MemberDisabled}, o.Dest()...)...)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil, fmt.Errorf("%w: key %s", certorder.ErrNotFound, keyID)
	}
	if err != nil {
		return c, nil, s.wrap("find credential", err)
	}
	order, err := o.MemberOrder(&c)
	return c, order, s.wrap("find credential", err)
}
