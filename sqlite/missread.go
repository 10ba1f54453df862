package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// missReader reads one order of a member, for the cache, on connections
// of its own, each with the statement prepared, through the driver's own
// interface rather than database/sql's: a profile of orderinfo at 1M
// orders (zipf) put database/sql's share of a miss (its pool, locks,
// Rows, conversions) at half of what SQLite itself took for the read.
type missReader struct {
	db    *sql.DB
	conns chan *missConn
}

type missConn struct {
	c    *sql.Conn
	stmt driver.Stmt
	args []driver.NamedValue
	dest []driver.Value
}

const memberOrderQuery = `SELECT ` + storekit.OrderColumns + ` FROM orders o WHERE o.id = ? AND o.member_id = ?`

func openMissReader(ctx context.Context, path string) (*missReader, error) {
	n := max(2, runtime.GOMAXPROCS(0))
	db, err := sql.Open("sqlite", dsnMapped(path, readMapped)+"&_pragma=query_only(1)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	m := &missReader{db: db, conns: make(chan *missConn, n)}
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			m.close()
			return nil, err
		}
		mc := &missConn{c: c, args: make([]driver.NamedValue, 2), dest: make([]driver.Value, 9)}
		err = c.Raw(func(dc any) error {
			p, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return fmt.Errorf("sqlite: %T prepares no statements", dc)
			}
			mc.stmt, err = p.PrepareContext(ctx, memberOrderQuery)
			return err
		})
		if err != nil {
			c.Close()
			m.close()
			return nil, err
		}
		if _, ok := mc.stmt.(driver.StmtQueryContext); !ok {
			mc.stmt.Close()
			c.Close()
			m.close()
			return nil, fmt.Errorf("sqlite: %T queries without a context", mc.stmt)
		}
		m.conns <- mc
	}
	return m, nil
}

func (m *missReader) close() error {
	var errs []error
	for {
		select {
		case mc := <-m.conns:
			mc.c.Raw(func(any) error { return mc.stmt.Close() })
			errs = append(errs, mc.c.Close())
			continue
		default:
		}
		break
	}
	return errors.Join(append(errs, m.db.Close())...)
}

// read reads the member's order orderID; nil if the member has none.
func (m *missReader) read(ctx context.Context, memberID, orderID int64) (*certorder.Order, error) {
	var mc *missConn
	select {
	case mc = <-m.conns:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { m.conns <- mc }()
	var o *certorder.Order
	err := mc.c.Raw(func(any) error {
		mc.args[0] = driver.NamedValue{Ordinal: 1, Value: orderID}
		mc.args[1] = driver.NamedValue{Ordinal: 2, Value: memberID}
		// With ctx, the driver watches it from a goroutine of its own for
		// each query: 1.5 µs of CPU of the ~10 a miss takes (-bench Miss,
		// user+sys time over 300,000 reads, 3.4-3.6 s against 3.0 with
		// context.Background()). Kept: without it, a read waiting on a
		// locked file would outlive the store timeout (up to busy_timeout).
		rows, err := mc.stmt.(driver.StmtQueryContext).QueryContext(ctx, mc.args)
		if err != nil {
			return err
		}
		defer rows.Close()
		clear(mc.dest)
		switch err := rows.Next(mc.dest); {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
		o, err = missOrder(mc.dest)
		return err
	})
	return o, err
}

// missOrder makes the order of a row of storekit.OrderColumns, as the
// driver gives it: each value put where a Scan would put it
// (storekit.OrderRow.Dest), so that the columns are named once.
func missOrder(v []driver.Value) (*certorder.Order, error) {
	var n storekit.OrderRow
	for i, d := range [...]any{&n.ID, &n.MemberID, &n.CommonName, &n.Status, &n.ValidTill, &n.RenewedBy, &n.Doc, &n.CertEnd, &n.Format} {
		switch d := d.(type) {
		case *int64:
			x, ok := v[i].(int64)
			if !ok {
				return nil, fmt.Errorf("sqlite: order column holds %T, not an integer", v[i])
			}
			*d = x
		case *string:
			switch x := v[i].(type) {
			case string:
				*d = x
			case []byte:
				*d = string(x)
			default:
				return nil, fmt.Errorf("sqlite: order column holds %T, not text", v[i])
			}
		case *[]byte:
			switch x := v[i].(type) {
			case []byte:
				*d = x // the driver's own copy
			case string:
				*d = []byte(x)
			}
		}
	}
	return n.Order()
}
