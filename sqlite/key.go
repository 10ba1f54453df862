package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// credentialColumns are the columns of the hot path's one read, before
// an order's (storekit.OrderColumns or NoOrderColumns).
const credentialColumns = `k.id, k.hash, k.revoked_at IS NOT NULL, m.id, m.name, m.disabled`

// FindCredential reads a key, its member and the member's order, in one
// query (the cache in front of the store is credcache.Store's).
func (s *Store) FindCredential(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error) {
	var c certorder.Credential
	stmt, args := s.findCredentialOrder, []any{orderID, keyID}
	if orderID == 0 {
		stmt, args = s.findCredential, []any{keyID}
	}
	var o storekit.OrderRow
	err := stmt.QueryRowContext(ctx, args...).Scan(append([]any{&c.KeyID, &c.KeyHash, &c.KeyRevoked,
		&c.MemberID, &c.Member, &c.MemberDisabled}, o.Dest()...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil, fmt.Errorf("%w: key %s", certorder.ErrNotFound, keyID)
	}
	if err != nil {
		return c, nil, s.wrap("find credential", err)
	}
	order, err := o.MemberOrder(&c)
	return c, order, s.wrap("find credential", err)
}
