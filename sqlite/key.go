package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// FindCredential reads a key, its member and the member's order, in one
// query (the cache in front of the store is credcache.Store's).
func (s *Store) FindCredential(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error) {
	stmt, args := s.findCredentialOrder, []any{orderID, keyID}
	if orderID == 0 {
		stmt, args = s.findCredential, []any{keyID}
	}
	var row storekit.CredentialRow
	err := stmt.QueryRowContext(ctx, args...).Scan(row.Dest()...)
	return row.Result(keyID, err, errors.Is(err, sql.ErrNoRows), s.Wrap)
}
