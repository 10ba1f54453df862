package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// AddKey stores a new key for a member.
func (s *Store) AddKey(ctx context.Context, member string, k certorder.Key) error {
	return s.wrap("add key", s.inTx(ctx, func(tx pgx.Tx) error {
		mid, err := storekit.MemberID(ctx, pgDB{tx}, member)
		if err != nil {
			return err
		}
		return insertKey(ctx, tx, mid, k)
	}))
}

func insertKey(ctx context.Context, tx pgx.Tx, memberID int64, k certorder.Key) error {
	_, err := tx.Exec(ctx, `INSERT INTO api_keys (id, member_id, label, hash, created_at) VALUES ($1, $2, $3, $4, now())`,
		k.ID, memberID, k.Label, k.Hash)
	return err
}

// lockMember locks the member's row for the transaction, so that counting
// what it holds and adding one more cannot interleave with another such
// transaction of the same member.
func lockMember(ctx context.Context, tx pgx.Tx, memberID int64) (string, error) {
	var name string
	err := tx.QueryRow(ctx, `SELECT name FROM members WHERE id = $1 FOR UPDATE`, memberID).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("%w: member %d", certorder.ErrNotFound, memberID)
	}
	return name, err
}

// AddMemberKey stores a new key for the member, within max active keys.
func (s *Store) AddMemberKey(ctx context.Context, memberID int64, k certorder.Key, max int) error {
	return s.wrap("add key", s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockMember(ctx, tx, memberID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE member_id = $1 AND revoked_at IS NULL`, memberID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return fmt.Errorf("%w: %d active keys", certorder.ErrLimit, n)
		}
		return insertKey(ctx, tx, memberID, k)
	}))
}

// Keys lists a member's keys, oldest first.
func (s *Store) Keys(ctx context.Context, member string) ([]certorder.Key, error) {
	mid, err := storekit.MemberID(ctx, s.Read, member)
	if err != nil {
		return nil, s.wrap("list keys", err)
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
	return ks, s.wrap("list keys", err)
}

// RevokeKey revokes a key; the first revocation time is kept.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1`, id)
	return s.wrap("revoke key", oneRow(tag, err, "key "+id))
}

// RevokeMemberKey revokes a key of the member; the first revocation time is kept.
func (s *Store) RevokeMemberKey(ctx context.Context, memberID int64, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 AND member_id = $2`,
		id, memberID)
	return s.wrap("revoke key", oneRow(tag, err, "key "+id))
}

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
