package storekit

import (
	"context"
	"time"

	"github.com/certorder/certorder"
)

// AddMember creates a member.
func (k *Kit) AddMember(ctx context.Context, name string) (certorder.Member, error) {
	if err := certorder.ValidMemberName(name); err != nil {
		return certorder.Member{}, err
	}
	m := certorder.Member{Name: name, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	err := k.Write.QueryRow(ctx, `INSERT INTO members (name, created_at) VALUES (?, ?) RETURNING id`, name, m.CreatedAt).Scan(&m.ID)
	return m, k.Wrap("add member "+name, err)
}

// memberColumns are the columns scanMember reads.
const memberColumns = `id, name, disabled, created_at, self_service_keys_off`

func scanMember(row Row) (certorder.Member, error) {
	var m certorder.Member
	var created Time
	err := row.Scan(&m.ID, &m.Name, &m.Disabled, &created, &m.SelfServiceKeysOff)
	m.CreatedAt = created.T
	return m, err
}

// FindMember returns the member with the name.
func (k *Kit) FindMember(ctx context.Context, name string) (certorder.Member, error) {
	m, err := scanMember(k.Read.QueryRow(ctx, `SELECT `+memberColumns+` FROM members WHERE name = ?`, name))
	return m, k.Wrap("find member", notFound(err, "member "+name))
}

// Members lists every member by name.
func (k *Kit) Members(ctx context.Context) ([]certorder.Member, error) {
	ms, err := Query(ctx, k.Read, scanMember, `SELECT `+memberColumns+` FROM members ORDER BY name`)
	return ms, k.Wrap("list members", err)
}

// SetMemberDisabled disables or re-enables a member; disabling ends its
// web sessions, so that enabling it again does not bring them back: in
// the same transaction, or, where the sessions are apart (SessionsApart),
// once the member is disabled (FindSession refuses them from that moment
// anyway).
func (k *Kit) SetMemberDisabled(ctx context.Context, name string, disabled bool) error {
	var id int64
	err := k.Write.InTx(ctx, func(tx DB) error {
		err := tx.QueryRow(ctx, `UPDATE members SET disabled = ? WHERE name = ? RETURNING id`, disabled, name).Scan(&id)
		if err != nil || !disabled || k.SessionsApart {
			return notFound(err, "member "+name)
		}
		return EndSessions(ctx, tx, id)
	})
	if err == nil && disabled && k.SessionsApart {
		err = EndSessions(ctx, k.Sessions, id)
	}
	return k.Wrap("set member "+name, err)
}

// SetSelfServiceKeys allows or forbids the member's self-service keys.
func (k *Kit) SetSelfServiceKeys(ctx context.Context, name string, allowed bool) error {
	n, err := k.Write.Exec(ctx, `UPDATE members SET self_service_keys_off = ? WHERE name = ?`, !allowed, name)
	return k.Wrap("set member "+name, oneRow(n, err, "member "+name))
}

// MemberID is the ID of the member with the name, read in db.
func MemberID(ctx context.Context, db DB, name string) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, `SELECT id FROM members WHERE name = ?`, name).Scan(&id)
	return id, notFound(err, "member "+name)
}
