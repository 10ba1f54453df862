package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
)

// AddMember creates a member.
func (s *Store) AddMember(ctx context.Context, name string) (certorder.Member, error) {
	if err := certorder.ValidMemberName(name); err != nil {
		return certorder.Member{}, err
	}
	m := certorder.Member{Name: name}
	err := s.pool.QueryRow(ctx, `INSERT INTO members (name, created_at) VALUES ($1, now()) RETURNING id, created_at`,
		name).Scan(&m.ID, &m.CreatedAt)
	return m, s.wrap("add member "+name, err)
}

// FindMember returns the member with the name.
func (s *Store) FindMember(ctx context.Context, name string) (certorder.Member, error) {
	var m certorder.Member
	err := s.pool.QueryRow(ctx, `SELECT id, name, disabled, created_at, self_service_keys_off FROM members WHERE name = $1`, name).
		Scan(&m.ID, &m.Name, &m.Disabled, &m.CreatedAt, &m.SelfServiceKeysOff)
	if errors.Is(err, pgx.ErrNoRows) {
		err = fmt.Errorf("%w: member %s", certorder.ErrNotFound, name)
	}
	return m, s.wrap("find member", err)
}

// Members lists every member by name.
func (s *Store) Members(ctx context.Context) ([]certorder.Member, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, name, disabled, created_at, self_service_keys_off FROM members ORDER BY name`)
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (certorder.Member, error) {
		var m certorder.Member
		err := row.Scan(&m.ID, &m.Name, &m.Disabled, &m.CreatedAt, &m.SelfServiceKeysOff)
		return m, err
	})
	return ms, s.wrap("list members", err)
}

// SetMemberDisabled disables or re-enables a member; disabling ends its
// web sessions, so that enabling it again does not bring them back.
func (s *Store) SetMemberDisabled(ctx context.Context, name string, disabled bool) error {
	return s.wrap("set member "+name, s.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `UPDATE members SET disabled = $1 WHERE name = $2 RETURNING id`, disabled, name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: member %s", certorder.ErrNotFound, name)
		}
		if err != nil || !disabled {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM sessions WHERE member_id = $1`, id)
		return err
	}))
}

// SetSelfServiceKeys allows or forbids the member's self-service keys.
func (s *Store) SetSelfServiceKeys(ctx context.Context, name string, allowed bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE members SET self_service_keys_off = $1 WHERE name = $2`, !allowed, name)
	return s.wrap("set member "+name, oneRow(tag, err, "member "+name))
}

func memberID(ctx context.Context, q querier, name string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `SELECT id FROM members WHERE name = $1`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: member %s", certorder.ErrNotFound, name)
	}
	return id, err
}
