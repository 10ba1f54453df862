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
