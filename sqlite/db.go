package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/certorder/certorder/internal/storekit"
)

// sqlDB is a database, a connection or a transaction as storekit.DB, the
// statements both stores share: their ? placeholders are SQLite's, their
// times are written as text (formatTime).
type sqlDB struct {
	q interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
	begin txBeginner // nil in a transaction
}

func (d sqlDB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := d.q.ExecContext(ctx, query, textTimes(args)...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (d sqlDB) QueryRow(ctx context.Context, query string, args ...any) storekit.Row {
	return sqlRow{d.q.QueryRowContext(ctx, query, textTimes(args)...)}
}

func (d sqlDB) Query(ctx context.Context, query string, args ...any) (storekit.ClosingRows, error) {
	rows, err := d.q.QueryContext(ctx, query, textTimes(args)...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// InTx runs fn in a transaction of the database (storekit.TxDB).
func (d sqlDB) InTx(ctx context.Context, fn func(tx storekit.DB) error) error {
	return inTx(ctx, d.begin, func(tx *sql.Tx) error { return fn(sqlDB{q: tx}) })
}

type sqlRow struct{ row *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return storekit.ErrNoRows
	}
	return err
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// textTimes are args with each time as the store keeps it.
func textTimes(args []any) []any {
	for i, a := range args {
		if _, ok := a.(time.Time); ok {
			out := append([]any(nil), args...)
			for j := i; j < len(out); j++ {
				if t, ok := out[j].(time.Time); ok {
					out[j] = formatTime(t)
				}
			}
			return out
		}
	}
	return args
}

// inList is the condition that column is one of a list argument (listJSON).
func inList(column string) string { return column + " IN (SELECT value FROM json_each(?))" }

// listJSON is a slice as the JSON array json_each reads.
func listJSON(slice any) any {
	b, _ := json.Marshal(slice) // the lists are of strings or numbers
	return string(b)
}
