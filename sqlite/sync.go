package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gofrs/flock"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// InSyncTx runs fn in one write transaction (see storekit.SyncStore).
func (s *Store) InSyncTx(ctx context.Context, fn func(storekit.SyncTx) error) error {
	return s.wrap("sync transaction", inTx(ctx, s.write, func(tx *sql.Tx) error {
		ot, err := newOrderTx(ctx, tx)
		if err != nil {
			return err
		}
		defer ot.close()
		return fn(&syncTx{orderTx: ot, SyncRows: storekit.SyncRows{Tx: sqlDB{q: tx}}})
	}))
}

// syncTx is storekit.SyncTx on a transaction. The batches are small (a
// page of orders), so its statements are prepared by database/sql as they
// come.
type syncTx struct {
	*orderTx
	storekit.SyncRows
}

func (t *syncTx) SaveOrder(ctx context.Context, memberID int64, o *certorder.Order, renewedBy int64) error {
	return t.save(ctx, memberID, o, renewedBy)
}

// SyncLockPath is the lock file of the sync of the store at path.
func SyncLockPath(path string) string { return path + "-sync.lock" }

// LockSync takes the sync lock: an exclusive flock(2) on a file beside the
// database. The kernel drops it when the process ends, however it ends, so
// a killed sync never leaves it behind; a SQLite file serves one machine,
// so a lock of that machine is enough.
func (s *Store) LockSync(ctx context.Context) (storekit.SyncLock, bool, error) {
	if s.closed.Load() {
		return nil, false, s.wrap("sync lock", sql.ErrConnDone)
	}
	l := flock.New(SyncLockPath(s.path))
	ok, err := l.TryLock()
	if err != nil {
		return nil, false, fmt.Errorf("sync lock: %w: %w", certorder.ErrUnavailable, err)
	}
	if !ok {
		return nil, false, nil
	}
	return fileLock{l}, true, nil
}

type fileLock struct{ l *flock.Flock }

func (f fileLock) Check(context.Context) error { return nil } // held until released or the process ends
func (f fileLock) Release()                    { f.l.Close() }
