// Package credcache is the cache in front of a store's FindCredential:
// credentials by key ID and each member's orders by number (absent ones
// too), bounded in bytes, in freecache's ring buffers, which the garbage
// collector never scans.
//
// It knows nothing of invalidation. Every entry is stored under a
// generation that the store gives: a number that changes whenever anything
// the cache holds may have changed (sqlite: the WAL-index header; postgres:
// a notification). A store reads the generation before it reads the
// database, and fills under that generation; a lookup finds only entries
// of the generation current when it looks. So an entry filled from a read
// that a later commit made stale is never served, and emptying the cache is
// moving to the next generation: old entries are never found again and are
// the first evicted.
package credcache

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/coocood/freecache"

	"github.com/certorder/certorder"
)

// DefaultBytes is the cache's default bound: with the service's own
// memory, under 150 MB of anonymous memory whatever the store holds
// (docs/PERFORMANCE.md). About 40,000 orders of CertCentral's size.
const DefaultBytes = 64 << 20

// MinBytes is the smallest cache: freecache's own minimum.
const MinBytes = 512 << 10

// Cache holds credentials and orders. The zero value is not usable; use New.
//
// Credentials, few and asked for on every request, are kept in a map of
// the current generation (lock-free reads), up to a sixteenth of the
// bytes; beyond, and for orders, freecache.
type Cache struct {
	c        *freecache.Cache
	timer    freecache.StoppableTimer
	creds    atomic.Pointer[credTable]
	credMax  int64 // bytes the credential map may hold
	credHits atomic.Int64
}

// credTable is the credentials of one generation.
type credTable struct {
	gen   uint64
	m     sync.Map // key ID -> certorder.Credential
	bytes atomic.Int64
}

// credOverhead is what a map entry costs beyond its texts, roughly.
const credOverhead = 128

// New returns a cache of at most bytes (at least MinBytes). Orders larger
// than about bytes/1024 are not cached: they are read from the store each
// time. Close it when done.
func New(bytes int) *Cache {
	bytes = max(bytes, MinBytes)
	timer := freecache.NewCachedTimer() // its LRU needs seconds only: no clock read per look-up
	c := &Cache{c: freecache.NewCacheCustomTimer(bytes-bytes/16, timer), timer: timer, credMax: int64(bytes / 16)}
	c.creds.Store(&credTable{})
	return c
}

// credential looks keyID up in the map, then in freecache.
func (c *Cache) credential(gen uint64, keyID string, kb []byte) (certorder.Credential, bool) {
	if t := c.creds.Load(); t.gen == gen {
		if v, ok := t.m.Load(keyID); ok {
			c.credHits.Add(1)
			return v.(certorder.Credential), true
		}
	}
	v, err := c.c.Get(credentialKey(kb, gen, keyID))
	if err != nil {
		return certorder.Credential{}, false
	}
	return decodeCredential(v, keyID)
}

// fillCredential stores a credential read under gen: in the map of gen
// while it has room, else in freecache. A fill of an older generation than
// the map's is dropped; a newer one starts a new map.
func (c *Cache) fillCredential(gen uint64, cred certorder.Credential, kb []byte) {
	t := c.creds.Load()
	for ; t.gen < gen; t = c.creds.Load() {
		c.creds.CompareAndSwap(t, &credTable{gen: gen})
	}
	if t.gen == gen {
		size := int64(len(cred.KeyID) + len(cred.KeyHash) + len(cred.Member) + credOverhead)
		if t.bytes.Add(size) <= c.credMax {
			t.m.Store(cred.KeyID, cred)
			return
		}
		t.bytes.Add(-size)
	}
	_ = c.c.Set(credentialKey(kb, gen, cred.KeyID), encodeCredential(cred), 0)
}

// Close stops the cache's clock.
func (c *Cache) Close() { c.timer.Stop() }

// Entry kinds, the key's byte after the generation.
const (
	kindCredential = 'k'
	kindOrder      = 'o'
)

// Find returns the credential of keyID and, when orderID is not 0, its
// member's order orderID (nil when the member has none), as
// FindCredential would, if the cache holds both for generation gen. The
// credential's KeyHash is shared: callers must not modify it.
func (c *Cache) Find(gen uint64, keyID string, orderID int64) (certorder.Credential, *certorder.Order, bool) {
	var kb [8 + 1 + 64]byte
	cred, ok := c.credential(gen, keyID, kb[:0])
	if !ok {
		return certorder.Credential{}, nil, false
	}
	if orderID == 0 {
		return cred, nil, true
	}
	v, err := c.c.Get(orderKey(kb[:0], gen, cred.MemberID, orderID))
	if err != nil {
		return certorder.Credential{}, nil, false
	}
	o, ok := decodeOrder(v, cred)
	if !ok {
		return certorder.Credential{}, nil, false
	}
	return cred, o, true
}

// Fill stores what FindCredential read for keyID and orderID (o nil: the
// member has no such order), under gen, the generation read before the
// database was.
func (c *Cache) Fill(gen uint64, cred certorder.Credential, orderID int64, o *certorder.Order) {
	var kb [8 + 1 + 64]byte
	if len(cred.KeyID) > 64 {
		return // not a key ID this service makes
	}
	c.fillCredential(gen, cred, kb[:0])
	// A value too large for the cache is refused by Set; it is then read
	// from the store each time, which is all that is lost.
	if orderID != 0 {
		_ = c.c.Set(orderKey(kb[:0], gen, cred.MemberID, orderID), encodeOrder(o), 0)
	}
}

// Stats says how many entries the cache holds, and how many look-ups of
// an entry found it and did not.
func (c *Cache) Stats() (entries, hits, misses int64) {
	n := int64(0)
	c.creds.Load().m.Range(func(any, any) bool { n++; return true })
	return c.c.EntryCount() + n, c.c.HitCount() + c.credHits.Load(), c.c.MissCount()
}

func credentialKey(b []byte, gen uint64, keyID string) []byte {
	b = binary.LittleEndian.AppendUint64(b, gen)
	b = append(b, kindCredential)
	return append(b, keyID...)
}

func orderKey(b []byte, gen uint64, memberID, orderID int64) []byte {
	b = binary.LittleEndian.AppendUint64(b, gen)
	b = append(b, kindOrder)
	b = binary.LittleEndian.AppendUint64(b, uint64(memberID))
	return binary.LittleEndian.AppendUint64(b, uint64(orderID))
}

// A credential is: flags (revoked 1, disabled 2), member ID, the hash
// (length-prefixed), the member's name.
func encodeCredential(c certorder.Credential) []byte {
	var flags byte
	if c.KeyRevoked {
		flags |= 1
	}
	if c.MemberDisabled {
		flags |= 2
	}
	b := make([]byte, 0, 1+8+1+len(c.KeyHash)+len(c.Member))
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(c.MemberID))
	b = append(b, byte(len(c.KeyHash)))
	b = append(b, c.KeyHash...)
	return append(b, c.Member...)
}

func decodeCredential(b []byte, keyID string) (certorder.Credential, bool) {
	if len(b) < 10 || len(b) < 10+int(b[9]) {
		return certorder.Credential{}, false
	}
	n := int(b[9])
	return certorder.Credential{
		KeyID:          keyID,
		KeyRevoked:     b[0]&1 != 0,
		MemberDisabled: b[0]&2 != 0,
		MemberID:       int64(binary.LittleEndian.Uint64(b[1:9])),
		KeyHash:        b[10 : 10+n : 10+n],
		Member:         string(b[10+n:]),
	}, true
}

// An order is: a presence byte (0: the member has no such order), then the
// order number, the renewal, the certificate's end in the document, and
// valid_till, common name and status (length-prefixed), then the document.
func encodeOrder(o *certorder.Order) []byte {
	if o == nil {
		return []byte{0}
	}
	b := make([]byte, 0, 1+3*8+3*2+len(o.ValidTill)+len(o.CommonName)+len(o.Status)+len(o.Doc))
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint64(b, uint64(o.ID))
	b = binary.LittleEndian.AppendUint64(b, uint64(o.RenewedBy))
	b = binary.LittleEndian.AppendUint64(b, uint64(o.CertEnd))
	for _, s := range []string{o.ValidTill, o.CommonName, o.Status} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return append(b, o.Doc...)
}

var errShort = errors.New("short")

func decodeOrder(b []byte, cred certorder.Credential) (*certorder.Order, bool) {
	if len(b) == 1 && b[0] == 0 {
		return nil, true
	}
	if len(b) < 25 || b[0] != 1 {
		return nil, false
	}
	o := &certorder.Order{
		ID:        int64(binary.LittleEndian.Uint64(b[1:])),
		RenewedBy: int64(binary.LittleEndian.Uint64(b[9:])),
		CertEnd:   int(binary.LittleEndian.Uint64(b[17:])),
		MemberID:  cred.MemberID,
		Member:    cred.Member,
	}
	b = b[25:]
	var err error
	text := func() string {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			err = errShort
			return ""
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s
	}
	o.ValidTill, o.CommonName, o.Status = text(), text(), text()
	if err != nil || o.CertEnd <= 0 || o.CertEnd >= len(b) {
		return nil, false
	}
	o.Doc = b
	return o, true
}
