package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/certorder/certorder"
)

// AddMember creates a member.
func (s *Store) AddMember(ctx context.Context, name string) (certorder.Member, error) {
	if err := certorder.ValidMemberName(name); err != nil {
		return certorder.Member{}, err
	}
	m := certorder.Member{Name: name, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	res, err := s.write.ExecContext(ctx, `INSERT INTO members (name, created_at) VALUES (?, ?)`,
		name, formatTime(m.CreatedAt))
	if err != nil {
		return certorder.Member{}, s.wrap("add member "+name, err)
	}
	m.ID, err = res.LastInsertId()
	return m, s.wrap("add member", err)
}

// SetMemberDisabled disables or re-enables a member; disabling ends its
// web sessions, so that enabling it again does not bring them back. The
// sessions are in a file of their own: they are deleted once the member is
// disabled (FindSession refuses them from that moment anyway).
func (s *Store) SetMemberDisabled(ctx context.Context, name string, disabled bool) error {
	var id int64
	err := inTx(ctx, s.write, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE members SET disabled = ? WHERE name = ? RETURNING id`, disabled, name).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: member %s", certorder.ErrNotFound, name)
		}
		return err
	})
	if err == nil && disabled {
		err = s.endSessions(ctx, id)
	}
	return s.wrap("set member "+name, err)
}
