package storekit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DB is one store's database, or a transaction of it, as the statements
// both stores share see it: a statement is written once, with ?
// placeholders (the PostgreSQL store numbers them: Rebind); a time is
// passed as a time.Time (the SQLite store keeps it as text, in its
// layout) or NullTime, and read with Time. The dialects' differences
// (RETURNING, ON CONFLICT, SKIP LOCKED, the types of sets) stay in each
// store's own SQL.
type DB interface {
	// Exec runs a statement and returns how many rows it touched.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// QueryRow runs a query of one row; its Scan returns ErrNoRows when
	// there is none.
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Query runs a query; the caller closes the rows.
	Query(ctx context.Context, query string, args ...any) (ClosingRows, error)
}

// ClosingRows are the rows of DB.Query.
type ClosingRows interface {
	Rows
	Close()
}

// ErrNoRows is what a DB's QueryRow scans when there is no row.
var ErrNoRows = errors.New("no rows")

// TxDB is a DB that begins transactions.
type TxDB interface {
	DB
	// InTx runs fn in a transaction, committed unless fn fails.
	InTx(ctx context.Context, fn func(tx DB) error) error
}

// Query runs a query on db and scans each row of it with scan.
func Query[T any](ctx context.Context, db DB, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return Collect(rows, scan)
}

// NullTime is NULL for the zero time, t otherwise: an argument of DB.
func NullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// TimeLayout is how the SQLite store keeps a time: as text that sorts in
// time order.
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

// Time scans a time as either store keeps it (PostgreSQL's timestamptz,
// SQLite's text in TimeLayout); NULL is the zero time.
type Time struct{ T time.Time }

// Scan implements sql.Scanner.
func (t *Time) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		t.T = time.Time{}
	case time.Time:
		t.T = v.UTC()
	case string:
		t.T, _ = time.Parse(TimeLayout, v)
	case []byte:
		t.T, _ = time.Parse(TimeLayout, string(v))
	default:
		return fmt.Errorf("storekit: cannot scan %T as a time", src)
	}
	return nil
}

// Rebind numbers the ? placeholders of query as PostgreSQL's $1, $2, ...;
// a ? within quotes is left alone.
func Rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n, quote := 0, byte(0)
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
