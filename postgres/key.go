package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// FindCredential reads a key, its member and the member's order, in one
// query (the cache in front of the store is credcache.Store's). The order is joined only if it is the key's member's: another
// member's order is never read, so it costs what a missing one does.
func (s *Store) FindCredential(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error) {
	var row storekit.CredentialRow
	err := s.read(ctx, func() error {
		row = storekit.CredentialRow{} // nothing of a first attempt cut short
		return s.pool.QueryRow(ctx, `SELECT `+storekit.CredentialColumns+`, `+storekit.OrderColumns+`
			FROM api_keys k JOIN members m ON m.id = k.member_id
			LEFT JOIN orders o ON o.id = $2 AND o.member_id = k.member_id
			WHERE k.id = $1`, keyID, orderID).Scan(row.Dest()...)
	})
	return row.Result(keyID, err, errors.Is(err, pgx.ErrNoRows), s.Wrap)
}
