package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/certorder/certorder/internal/storekit"
)

// pgDB is the pool or a transaction as storekit.DB, for the statements
// both stores share: their ? placeholders numbered ($1, ...), the times
// passed as they are.
type pgDB struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
		Begin(ctx context.Context) (pgx.Tx, error)
	}
}

func (d pgDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := d.q.Exec(ctx, storekit.Rebind(query), args...)
	return tag.RowsAffected(), err
}

func (d pgDB) QueryRow(ctx context.Context, query string, args ...any) storekit.Row {
	return pgRow{d.q.QueryRow(ctx, storekit.Rebind(query), args...)}
}

func (d pgDB) Query(ctx context.Context, query string, args ...any) (storekit.ClosingRows, error) {
	return d.q.Query(ctx, storekit.Rebind(query), args...)
}

// InTx runs fn in a transaction (a nested one, a savepoint, in a
// transaction): storekit.TxDB.
func (d pgDB) InTx(ctx context.Context, fn func(tx storekit.DB) error) error {
	return pgx.BeginFunc(ctx, d.q, func(tx pgx.Tx) error { return fn(pgDB{tx}) })
}

type pgRow struct{ row pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	if err := r.row.Scan(dest...); !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	return storekit.ErrNoRows
}

// inList is the condition that column is one of a list argument (arrayArg).
func inList(column string) string { return column + " = ANY(?)" }

// arrayArg is a slice as an array argument, empty rather than nil (nonNil).
func arrayArg(slice any) any {
	switch xs := slice.(type) {
	case []string:
		return nonNil(xs)
	case []int64:
		return nonNil(xs)
	}
	return slice
}

// deref is *t, the zero time for nil.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
