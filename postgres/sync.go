package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// InSyncTx runs fn in one transaction (see storekit.SyncStore).
func (s *Store) InSyncTx(ctx context.Context, fn func(storekit.SyncTx) error) error {
	return s.wrap("sync transaction", s.inTx(ctx, func(tx pgx.Tx) error {
		ot, err := newOrderTx(ctx, tx)
		if err != nil {
			return err
		}
		return fn(&syncTx{orderTx: ot, SyncRows: storekit.SyncRows{Tx: pgDB{tx}}})
	}))
}

// syncTx is storekit.SyncTx on a transaction.
type syncTx struct {
	*orderTx
	storekit.SyncRows
}

func (t *syncTx) SaveOrder(ctx context.Context, memberID int64, o *certorder.Order, renewedBy int64) error {
	return t.save(ctx, memberID, o, renewedBy)
}

// LockSync takes the sync lock: a session-level advisory lock on a
// connection of its own, held for the run. PostgreSQL drops it when the
// session ends, so a killed instance never leaves it behind.
func (s *Store) LockSync(ctx context.Context) (storekit.SyncLock, bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, s.wrap("sync lock", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, `+schemaKey+`)`, lockSync).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, s.wrap("sync lock", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return &sessionLock{conn: conn}, true, nil
}

type sessionLock struct {
	conn *pgxpool.Conn
}

// Check pings the lock's session: if it is gone, so is the lock.
func (l *sessionLock) Check(ctx context.Context) error {
	if err := l.conn.Ping(ctx); err != nil {
		return fmt.Errorf("the sync lock's database session: %w: %w", certorder.ErrUnavailable, err)
	}
	return nil
}

// Release unlocks, then ends the lock's session: a pooled connection must
// not keep the lock should the unlock fail, and the session's end releases
// it whatever state the connection is in (though not at once, hence the
// unlock first).
func (l *sessionLock) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, `+schemaKey+`)`, lockSync)
	l.conn.Hijack().Close(ctx)
}
