package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
)

// cache is the store's cache of credentials and orders with what keeps it
// exact: the WAL index says whether anything was committed since an entry
// was filled, and a pinned connection keeps the WAL index in place.
type cache struct {
	entries *credcache.Cache
	wal     *walIndex
	pin     *sql.DB
	miss    *missReader // one order of a member, when the credential is cached
}

func (c *cache) close() error {
	c.entries.Close()
	return errors.Join(c.miss.close(), c.pin.Close(), c.wal.close()) // the -shm descriptor last: see mapShared
}

var _ certorder.CredentialCache = (*Store)(nil)

// StartCache turns on the cache in front of FindCredential. Every look-up
// first reads the WAL-index header: any commit by any connection of any
// process since the entries were filled moves the cache to a new
// generation, and the entries of the old one are never found again. So a
// revoked key, a disabled member, a changed order are seen by the next
// request, as without the cache.
func (s *Store) StartCache(ctx context.Context, cfg certorder.CacheConfig) error {
	if s.cache.Load() != nil {
		return errors.New("sqlite: the cache is on already")
	}
	// A connection of its own, that has read, holds the database open as
	// long as the store is: SQLite removes or resets the -shm file only
	// when its last connection closes.
	pin, err := sql.Open("sqlite", dsn(s.path)+"&_pragma=query_only(1)")
	if err != nil {
		return fmt.Errorf("sqlite: cache: %w", err)
	}
	pin.SetMaxOpenConns(1)
	pin.SetMaxIdleConns(1)
	var n int
	if err := pin.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master`).Scan(&n); err != nil {
		pin.Close()
		return s.wrap("cache", err)
	}
	wal, err := openWALIndex(s.path)
	if err != nil {
		pin.Close()
		return err
	}
	miss, err := openMissReader(ctx, s.path)
	if err != nil {
		wal.close()
		pin.Close()
		return s.wrap("cache", err)
	}
	c := &cache{entries: credcache.New(cfg.Bytes), wal: wal, pin: pin, miss: miss}
	if !s.cache.CompareAndSwap(nil, c) {
		c.close()
		return errors.New("sqlite: the cache is on already")
	}
	return nil
}

// CachedCredential answers as FindCredential would, from the cache alone
// (hit), else says what it found, for ReadMiss.
func (s *Store) CachedCredential(keyID string, orderID int64) (certorder.Credential, *certorder.Order, certorder.CacheMiss, bool) {
	c := s.cache.Load()
	if c == nil {
		return certorder.Credential{}, nil, certorder.CacheMiss{KeyID: keyID, OrderID: orderID}, false
	}
	gen, ok := c.wal.generation()
	if !ok {
		return certorder.Credential{}, nil, certorder.CacheMiss{KeyID: keyID, OrderID: orderID}, false
	}
	return c.entries.Find(gen, keyID, orderID)
}

// CacheStats says how many entries the cache holds and how look-ups fared.
func (s *Store) CacheStats() (entries, hits, misses int64) {
	if c := s.cache.Load(); c != nil {
		return c.entries.Stats()
	}
	return 0, 0, 0
}

// FindCredential returns a key, its member and the member's order: from
// the cache when it is on and holds them for the current generation, else
// from the database (ReadMiss).
func (s *Store) FindCredential(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error) {
	cred, o, miss, hit := s.CachedCredential(keyID, orderID)
	if hit {
		return cred, o, nil
	}
	return s.ReadMiss(ctx, miss)
}

// ReadMiss reads from the database what CachedCredential missed (the
// order alone when the credential was cached) and fills the cache under
// the generation read before it. (It reads the generation again rather
// than take the look-up's: a fill is then always under a generation of
// this cache, read before the database was.)
func (s *Store) ReadMiss(ctx context.Context, miss certorder.CacheMiss) (certorder.Credential, *certorder.Order, error) {
	c := s.cache.Load()
	if c == nil {
		return s.readCredential(ctx, miss.KeyID, miss.OrderID)
	}
	gen, ok := c.wal.generation()
	if !ok {
		return s.readCredential(ctx, miss.KeyID, miss.OrderID)
	}
	return c.entries.ReadMiss(ctx, gen, miss, s.readCredential,
		func(ctx context.Context, cred certorder.Credential, orderID int64) (*certorder.Order, error) {
			return s.readMemberOrder(ctx, c.miss, cred, orderID)
		})
}

// readMemberOrder reads the credential's member's order orderID; nil if
// the member has none (another member's is never read).
func (s *Store) readMemberOrder(ctx context.Context, m *missReader, cred certorder.Credential, orderID int64) (*certorder.Order, error) {
	o, err := m.read(ctx, cred.MemberID, orderID)
	if o != nil {
		o.Member = cred.Member
	}
	return o, s.wrap("find order", err)
}
