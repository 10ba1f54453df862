package credcache

import (
	"context"
	"log/slog"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// Source is what a store tells the cache in front of it: when anything
// cached may have changed, and its member's order alone when the
// credential is cached. Each store has one (sqlite: the WAL index;
// postgres: notifications), made by its CacheSource.
type Source interface {
	// Generation is a number that changes whenever anything the cache
	// holds may have changed; false when the cache must not be used now
	// (postgres: its notification connection is down).
	Generation() (uint64, bool)
	// MemberOrder reads the credential's member's order orderID, nil if
	// the member has none (another member's is never read).
	MemberOrder(ctx context.Context, cred certorder.Credential, orderID int64) (*certorder.Order, error)
}

// Sourcer is a store that can keep a cache in front of it exact.
type Sourcer interface {
	// CacheSource starts what tells the cache of the store's changes; the
	// store's Close stops it.
	CacheSource(ctx context.Context, cfg SourceConfig) (Source, error)
}

// SourceConfig is what a store's Source is told.
type SourceConfig struct {
	Instance string       // how this instance names itself to operators waiting for it (postgres)
	Logger   *slog.Logger // where the source reports trouble (a lost notification connection); nil: nowhere
}

// Store is a storekit.CredentialStore in front of another: FindCredential
// answers from memory when the cache holds the credential (and the order)
// for the source's current generation, and otherwise reads the store
// within the timeout, and fills the cache. Without a cache (NewStore with
// a nil Source), every call reads the store within the timeout. A request
// never sees what a change committed before it arrived made stale
// (sqlite), or what a change whose AwaitInstances returned made stale
// (postgres), and a hit sets no timer.
type Store struct {
	store   storekit.CredentialStore
	src     Source // nil: no cache
	cache   *Cache
	timeout time.Duration
}

// NewStore puts a cache of bytes, kept exact by src, in front of store;
// src nil: no cache. timeout bounds every read of store.
func NewStore(store storekit.CredentialStore, src Source, bytes int, timeout time.Duration) *Store {
	s := &Store{store: store, src: src, timeout: timeout}
	if src != nil {
		s.cache = New(bytes)
	}
	return s
}

// FindCredential returns the key, its member and, when orderID is not 0,
// that member's order, as the store's FindCredential does.
func (s *Store) FindCredential(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error) {
	if s.cache != nil {
		if gen, ok := s.src.Generation(); ok {
			cred, o, m, hit := s.cache.Find(gen, keyID, orderID)
			if hit {
				return cred, o, nil
			}
			return s.readMiss(ctx, gen, m)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.store.FindCredential(ctx, keyID, orderID)
}

// readMiss reads what Find missed (the order alone when the credential was
// cached) and fills the cache under gen, read before the store is.
func (s *Store) readMiss(ctx context.Context, gen uint64, m Miss) (certorder.Credential, *certorder.Order, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.cache.ReadMiss(ctx, gen, m, s.store.FindCredential, s.src.MemberOrder)
}

// Enabled reports whether the cache is on.
func (s *Store) Enabled() bool { return s.cache != nil }

// Stats says how many entries the cache holds, and how many calls it
// answered from memory and did not; zeros without a cache.
func (s *Store) Stats() (entries, hits, misses int64) {
	if s.cache == nil {
		return 0, 0, 0
	}
	return s.cache.Stats()
}

var _ storekit.CredentialStore = (*Store)(nil)
