package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// AddKey stores a new key for a member.
func (s *Store) AddKey(ctx context.Context, member string, k certorder.Key) error {
	return s.wrap("add key", inTx(ctx, s.write, func(tx *sql.Tx) error {
		mid, err := storekit.MemberID(ctx, sqlDB{q: tx}, member)
		if err != nil {
			return err
		}
		return insertKey(ctx, tx, mid, k)
	}))
}

func insertKey(ctx context.Context, tx *sql.Tx, memberID int64, k certorder.Key) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, member_id, label, hash, created_at) VALUES (?, ?, ?, ?, ?)`,
		k.ID, memberID, k.Label, k.Hash, now())
	return err
}

// memberName is the name of member id; ErrNotFound if none.
func memberName(ctx context.Context, tx *sql.Tx, id int64) (string, error) {
	var name string
	err := tx.QueryRowContext(ctx, `SELECT name FROM members WHERE id = ?`, id).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("%w: member %d", certorder.ErrNotFound, id)
	}
	return name, err
}

// AddMemberKey stores a new key for the member, within max active keys.
// The write connection is one, and its transactions begin IMMEDIATE, so
// the count and the insert cannot interleave with another writer's.
func (s *Store) AddMemberKey(ctx context.Context, memberID int64, k certorder.Key, max int) error {
	return s.wrap("add key", inTx(ctx, s.write, func(tx *sql.Tx) error {
		if _, err := memberName(ctx, tx, memberID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM api_keys WHERE member_id = ? AND revoked_at IS NULL`, memberID).Scan(&n); err != nil {
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
	rows, err := s.read.QueryContext(ctx, `SELECT id, label, hash, created_at, revoked_at
		FROM api_keys WHERE member_id = ? ORDER BY created_at, id`, mid)
	if err != nil {
		return nil, s.wrap("list keys", err)
	}
	defer rows.Close()
	var ks []certorder.Key
	for rows.Next() {
		k := certorder.Key{Member: member}
		var created, revoked sql.NullString
		if err := rows.Scan(&k.ID, &k.Label, &k.Hash, &created, &revoked); err != nil {
			return nil, s.wrap("list keys", err)
		}
		k.CreatedAt, k.RevokedAt = parseTime(created), parseTime(revoked)
		ks = append(ks, k)
	}
	return ks, s.wrap("list keys", rows.Err())
}

// RevokeKey revokes a key; the first revocation time is kept.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	res, err := s.write.ExecContext(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, now(), id)
	return s.wrap("revoke key", oneRow(res, err, "key "+id))
}

// RevokeMemberKey revokes a key of the member; the first revocation time is kept.
func (s *Store) RevokeMemberKey(ctx context.Context, memberID int64, id string) error {
	res, err := s.write.ExecContext(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? AND member_id = ?`,
		now(), id, memberID)
	return s.wrap("revoke key", oneRow(res, err, "key "+id))
}

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
