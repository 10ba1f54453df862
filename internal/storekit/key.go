package storekit

import (
	"context"
	"fmt"
	"time"

	"github.com/certorder/certorder"
)

// AddKey stores a new key for a member.
func (k *Kit) AddKey(ctx context.Context, member string, key certorder.Key) error {
	return k.Wrap("add key", k.Write.InTx(ctx, func(tx DB) error {
		mid, err := MemberID(ctx, tx, member)
		if err != nil {
			return err
		}
		return insertKey(ctx, tx, mid, key)
	}))
}

func insertKey(ctx context.Context, tx DB, memberID int64, k certorder.Key) error {
	_, err := tx.Exec(ctx, `INSERT INTO api_keys (id, member_id, label, hash, created_at) VALUES (?, ?, ?, ?, ?)`,
		k.ID, memberID, k.Label, k.Hash, time.Now())
	return err
}

// LockMember reads the member's row for the transaction tx, locked where
// the store has row locks (Kit.ForUpdate; SQLite's one writer is the lock),
// so that counting what it holds and adding one more cannot interleave
// with another such transaction of the same member. ErrNotFound if none.
func (k *Kit) LockMember(ctx context.Context, tx DB, memberID int64) (string, error) {
	var name string
	err := tx.QueryRow(ctx, `SELECT name FROM members WHERE id = ?`+k.ForUpdate, memberID).Scan(&name)
	return name, notFound(err, fmt.Sprintf("member %d", memberID))
}

// AddMemberKey stores a new key for the member, within max active keys.
func (k *Kit) AddMemberKey(ctx context.Context, memberID int64, key certorder.Key, max int) error {
	return k.Wrap("add key", k.Write.InTx(ctx, func(tx DB) error {
		if _, err := k.LockMember(ctx, tx, memberID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE member_id = ? AND revoked_at IS NULL`, memberID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return fmt.Errorf("%w: %d active keys", certorder.ErrLimit, n)
		}
		return insertKey(ctx, tx, memberID, key)
	}))
}

// Keys lists a member's keys, oldest first.
func (k *Kit) Keys(ctx context.Context, member string) ([]certorder.Key, error) {
	mid, err := MemberID(ctx, k.Read, member)
	if err != nil {
		return nil, k.Wrap("list keys", err)
	}
	ks, err := Query(ctx, k.Read, func(row Row) (certorder.Key, error) {
		key := certorder.Key{Member: member}
		var created, revoked Time
		err := row.Scan(&key.ID, &key.Label, &key.Hash, &created, &revoked)
		key.CreatedAt, key.RevokedAt = created.T, revoked.T
		return key, err
	}, `SELECT id, label, hash, created_at, revoked_at FROM api_keys WHERE member_id = ? ORDER BY created_at, id`, mid)
	return ks, k.Wrap("list keys", err)
}

// RevokeKey revokes a key; the first revocation time is kept.
func (k *Kit) RevokeKey(ctx context.Context, id string) error {
	n, err := k.Write.Exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, time.Now(), id)
	return k.Wrap("revoke key", oneRow(n, err, "key "+id))
}

// RevokeMemberKey revokes a key of the member; the first revocation time is kept.
func (k *Kit) RevokeMemberKey(ctx context.Context, memberID int64, id string) error {
	n, err := k.Write.Exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? AND member_id = ?`,
		time.Now(), id, memberID)
	return k.Wrap("revoke key", oneRow(n, err, "key "+id))
}
