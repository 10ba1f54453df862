package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
)

// cache is what keeps a cache in front of the store exact
// (credcache.Source): the WAL index says whether anything was committed
// since an entry was filled, and a pinned connection keeps the WAL index in
// place; miss reads a member's order alone, when the credential is cached.
type cache struct {
	s    *Store
	wal  *walIndex
	pin  *sql.DB
	miss *missReader
}

func (c *cache) close() error {
	return errors.Join(c.miss.close(), c.pin.Close(), c.wal.close()) // the -shm descriptor last: see mapShared
}

var _ credcache.Sourcer = (*Store)(nil)

// CacheSource starts what keeps a cache in front of the store exact.
// Every look-up first reads the WAL-index header: any commit by any
// connection of any process since the entries were filled moves the cache
// to a new generation, and the entries of the old one are never found
// again. So a revoked key, a disabled member, a changed order are seen by
// the next request, as without the cache.
func (s *Store) CacheSource(ctx context.Context, _ credcache.SourceConfig) (credcache.Source, error) {
	if s.cache.Load() != nil {
		return nil, errors.New("sqlite: the cache is on already")
	}
	// A connection of its own, that has read, holds the database open as
	// long as the store is: SQLite removes or resets the -shm file only
	// when its last connection closes.
	pin, err := sql.Open("sqlite", dsn(s.path)+"&_pragma=query_only(1)")
	if err != nil {
		return nil, fmt.Errorf("sqlite: cache: %w", err)
	}
	pin.SetMaxOpenConns(1)
	pin.SetMaxIdleConns(1)
	var n int
	if err := pin.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master`).Scan(&n); err != nil {
		pin.Close()
		return nil, s.wrap("cache", err)
	}
	wal, err := openWALIndex(s.path)
	if err != nil {
		pin.Close()
		return nil, err
	}
	miss, err := openMissReader(ctx, s.path)
	if err != nil {
		wal.close()
		pin.Close()
		return nil, s.wrap("cache", err)
	}
	c := &cache{s: s, wal: wal, pin: pin, miss: miss}
	if !s.cache.CompareAndSwap(nil, c) {
		c.close()
		return nil, errors.New("sqlite: the cache is on already")
	}
	return c, nil
}

// Generation is the WAL-index header's change counter.
func (c *cache) Generation() (uint64, bool) { return c.wal.generation() }

// MemberOrder reads the credential's member's order orderID; nil if the
// member has none (another member's is never read).
func (c *cache) MemberOrder(ctx context.Context, cred certorder.Credential, orderID int64) (*certorder.Order, error) {
	o, err := c.miss.read(ctx, cred.MemberID, orderID)
	if o != nil {
		o.Member = cred.Member
	}
	return o, c.s.wrap("find order", err)
}
