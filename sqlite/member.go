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

// FindMember returns the member with the name.
func (s *Store) FindMember(ctx context.Context, name string) (certorder.Member, error) {
	m, err := scanMember(s.read.QueryRowContext(ctx, `SELECT `+memberColumns+` FROM members WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		err = fmt.Errorf("%w: member %s", certorder.ErrNotFound, name)
	}
	return m, s.wrap("find member", err)
}

// Members lists every member by name.
func (s *Store) Members(ctx context.Context) ([]certorder.Member, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+memberColumns+` FROM members ORDER BY name`)
	if err != nil {
		return nil, s.wrap("list members", err)
	}
	defer rows.Close()
	var ms []certorder.Member
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, s.wrap("list members", err)
		}
		ms = append(ms, m)
	}
	return ms, s.wrap("list members", rows.Err())
}

// memberColumns are the columns scanMember reads.
const memberColumns = `id, name, disabled, created_at, self_service_keys_off`

func scanMember(row interface{ Scan(...any) error }) (certorder.Member, error) {
	var m certorder.Member
	var created sql.NullString
	err := row.Scan(&m.ID, &m.Name, &m.Disabled, &created, &m.SelfServiceKeysOff)
	m.CreatedAt = parseTime(created)
	return m, err
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

// SetSelfServiceKeys allows or forbids the member's self-service keys.
func (s *Store) SetSelfServiceKeys(ctx context.Context, name string, allowed bool) error {
	res, err := s.write.ExecContext(ctx, `UPDATE members SET self_service_keys_off = ? WHERE name = ?`, !allowed, name)
	return s.wrap("set member "+name, oneRow(res, err, "member "+name))
}

func memberID(ctx context.Context, q queryRower, name string) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM members WHERE name = ?`, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: member %s", certorder.ErrNotFound, name)
	}
	return id, err
}
