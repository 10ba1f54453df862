// Package credcache is the cache in front of a store's FindCredential:
// credentials by key ID and each member's orders by number (absent ones
// too), bounded in bytes, in an otter cache (W-TinyLFU: a frequency sketch
// admits a new entry only if it is asked for more often than the one it
// would evict, so a scan of orders read once does not flush the popular
// ones; lock-free reads) whose entries are shared, never copied, on a hit.
//
// Orders are not compressed. Stored with S2 and a dictionary of the first
// documents cached, loadbench's took 312 bytes of heap instead of 1,487
// (1,325 instead of 2,264 with a full-size random CSR) and 64 MiB held
// 213,000 of them instead of 42,000; but each entry is an object the
// collector marks, and with the cache full, under the service's memory
// limit, collection took 62% of the CPU instead of 27% (both with an
// entry overhead of 128) for a hit rate of 91% instead of 87% (-bench
// ServeFull), and orderinfo at 1M orders (zipf) fell from 0.53 of bare to
// 0.29 (docs/PERFORMANCE.md). A cache whose
// entries are not objects (an index without pointers into one byte arena)
// would let compression pay.
//
// It knows nothing of invalidation. Every entry is stored under a
// generation that the store gives: a number that changes whenever anything
// the cache holds may have changed (sqlite: the WAL-index header; postgres:
// a notification). A store reads the generation before it reads the
// database, and fills under that generation; a look-up finds only entries
// of the generation current when it looks. So an entry filled from a read
// that a later commit made stale is never served, and emptying the cache is
// moving to the next generation: old entries are never found again and are
// evicted as new ones come (they are never read again).
package credcache

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/maypok86/otter/v2"

	"github.com/certorder/certorder"
)

// DefaultBytes is the cache's default bound: with the service's own
// memory, under 150 MB of anonymous memory whatever the store holds
// (docs/PERFORMANCE.md). About 40,000 orders of CertCentral's size.
const DefaultBytes = 64 << 20

// MinBytes is the smallest cache.
const MinBytes = 512 << 10

// entryOverhead is what an entry costs beyond its bytes, roughly: otter's
// node and table slot, the key, the allocator's rounding. It counts in the
// bound. Measured (-bench MemoryPerOrder, heap growth over the entries held
// in a full 64 MiB cache): 1,487 bytes for an entry of 1,399, so 128 would
// be closer; but the bytes it leaves free are the collector's headroom
// under the service's memory limit: with 128 the cache held 41,900 orders
// instead of 37,200, for 86.6% hits instead of 86.3%, and collection took
// 22% of the CPU instead of 17-19% (-bench ServeFull). So 320.
const entryOverhead = 320

// Cache holds credentials and orders. The zero value is not usable; use New.
//
// Credentials, few and asked for on every request, are kept in a map of
// the current generation, up to a sixteenth of the bytes; beyond, and for
// orders, in the otter cache.
type Cache struct {
	c            *otter.Cache[key, value]
	maxEntry     int
	creds        atomic.Pointer[credTable]
	credMax      int64        // bytes the credential map may hold
	hits, misses atomic.Int64 // of Find: requests answered from the cache, and not
}

// key is an entry's key: an order of a member, or a credential (member
// and order 0, keyID set), of one generation.
type key struct {
	gen      uint64
	memberID int64
	orderID  int64
	keyID    string
}

// credTable is the credentials of one generation.
type credTable struct {
	gen   uint64
	m     sync.Map // key ID -> certorder.Credential
	bytes atomic.Int64
}

// New returns a cache of at most bytes (at least MinBytes). An order
// larger than a thousandth of it is not cached: it is read from the store
// each time.
func New(bytes int) *Cache {
	bytes = max(bytes, MinBytes)
	c := &Cache{maxEntry: bytes / 1024, credMax: int64(bytes / 16)}
	c.c = otter.Must(&otter.Options[key, value]{
		MaximumWeight: uint64(bytes - bytes/16),
		Weigher:       weigh,
	})
	c.creds.Store(&credTable{})
	return c
}

// value is an entry: an order (encoded) or a credential, held in otter's
// node itself. As an interface, an order was one more object per entry
// for the collector to mark: a full collection with 213,000 small entries
// took 22-27 ms with it, 15-16 ms without (-bench GCFull).
type value struct {
	order []byte
	cred  *certorder.Credential
}

func weigh(k key, v value) uint32 {
	n := entryOverhead + len(k.keyID) + cap(v.order)
	if v.cred != nil {
		n += len(v.cred.KeyHash) + len(v.cred.Member) + 128 // the struct
	}
	return uint32(n)
}

// Close stops the cache's goroutines.
func (c *Cache) Close() { c.c.StopAllGoroutines() }

// Find returns the credential of keyID and, when orderID is not 0, its
// member's order orderID (nil when the member has none), as
// FindCredential would, if the cache holds both for generation gen (hit).
// Both are shared: callers must not modify them. On a miss it returns
// what it found, for ReadMiss.
func (c *Cache) Find(gen uint64, keyID string, orderID int64) (certorder.Credential, *certorder.Order, certorder.CacheMiss, bool) {
	cred, ok := c.Credential(gen, keyID)
	if !ok {
		c.misses.Add(1)
		return certorder.Credential{}, nil, certorder.CacheMiss{KeyID: keyID, OrderID: orderID}, false
	}
	if orderID == 0 {
		c.hits.Add(1)
		return cred, nil, certorder.CacheMiss{}, true
	}
	o, ok := c.Order(gen, cred.MemberID, orderID)
	if !ok {
		c.misses.Add(1)
		return certorder.Credential{}, nil, certorder.CacheMiss{KeyID: keyID, OrderID: orderID, Cred: cred, CredHit: true}, false
	}
	c.hits.Add(1)
	return cred, o, certorder.CacheMiss{}, true
}

// ReadMiss reads what Find missed, with readCredential (the credential
// and the order, as FindCredential reads them) or, when the credential was
// cached, readOrder (its member's order alone), and fills the cache under
// gen, the generation read before the database is.
func (c *Cache) ReadMiss(ctx context.Context, gen uint64, m certorder.CacheMiss,
	readCredential func(ctx context.Context, keyID string, orderID int64) (certorder.Credential, *certorder.Order, error),
	readOrder func(ctx context.Context, cred certorder.Credential, orderID int64) (*certorder.Order, error),
) (certorder.Credential, *certorder.Order, error) {
	if m.CredHit {
		o, err := readOrder(ctx, m.Cred, m.OrderID)
		if err == nil {
			c.FillOrder(gen, m.Cred.MemberID, m.OrderID, o)
		}
		return m.Cred, o, err
	}
	cred, o, err := readCredential(ctx, m.KeyID, m.OrderID)
	if err == nil {
		c.Fill(gen, cred, m.OrderID, o)
	}
	return cred, o, err
}

// Order returns the member's order orderID if the cache holds it for
// generation gen (nil: the member has no such order). It is shared:
// callers must not modify it.
func (c *Cache) Order(gen uint64, memberID, orderID int64) (*certorder.Order, bool) {
	v, ok := c.c.GetIfPresent(key{gen: gen, memberID: memberID, orderID: orderID})
	if !ok {
		return nil, false
	}
	return decodeOrder(v.order, memberID)
}

// An order is kept as one []byte, which the garbage collector need not
// scan (a cache of tens of thousands of Orders, each with its strings,
// made collection a seventh of the service's CPU at 1M orders): a presence
// byte (0: the member has no such order), the order number, the renewal
// and the certificate's end, the lengths of valid_till, common name,
// status and member name, those texts, and the document. A hit makes an
// Order whose texts and document point into it: it is never written again.
func encodeOrder(o *certorder.Order) []byte {
	if o == nil {
		return []byte{0}
	}
	texts := []string{o.ValidTill, o.CommonName, o.Status, o.Member}
	n := 1 + 3*8 + 4*4 + len(o.Doc)
	for _, t := range texts {
		n += len(t)
	}
	b := make([]byte, 0, n)
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint64(b, uint64(o.ID))
	b = binary.LittleEndian.AppendUint64(b, uint64(o.RenewedBy))
	b = binary.LittleEndian.AppendUint64(b, uint64(o.CertEnd))
	for _, t := range texts {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(t)))
	}
	for _, t := range texts {
		b = append(b, t...)
	}
	return append(b, o.Doc...)
}

func decodeOrder(b []byte, memberID int64) (*certorder.Order, bool) {
	if len(b) == 1 && b[0] == 0 {
		return nil, true
	}
	const head = 1 + 3*8 + 4*4
	if len(b) < head || b[0] != 1 {
		return nil, false
	}
	o := &certorder.Order{
		ID:        int64(binary.LittleEndian.Uint64(b[1:])),
		RenewedBy: int64(binary.LittleEndian.Uint64(b[9:])),
		CertEnd:   int(binary.LittleEndian.Uint64(b[17:])),
		MemberID:  memberID,
	}
	at := head
	text := func(i int) string {
		n := int(binary.LittleEndian.Uint32(b[25+4*i:]))
		if n > len(b)-at {
			return ""
		}
		t := unsafe.String(unsafe.SliceData(b[at:]), n) // b is never written once cached
		at += n
		return t
	}
	o.ValidTill, o.CommonName, o.Status, o.Member = text(0), text(1), text(2), text(3)
	o.Doc = b[at:len(b):len(b)]
	if o.CertEnd <= 0 || o.CertEnd >= len(o.Doc) {
		return nil, false
	}
	return o, true
}

// Credential looks keyID up in the map, then in otter.
func (c *Cache) Credential(gen uint64, keyID string) (certorder.Credential, bool) {
	if t := c.creds.Load(); t.gen == gen {
		if v, ok := t.m.Load(keyID); ok {
			return v.(certorder.Credential), true
		}
	}
	v, ok := c.c.GetIfPresent(key{gen: gen, keyID: keyID})
	if !ok || v.cred == nil {
		return certorder.Credential{}, false
	}
	return *v.cred, true
}

// Fill stores what FindCredential read for keyID and orderID (o nil: the
// member has no such order), under gen, the generation read before the
// database was.
func (c *Cache) Fill(gen uint64, cred certorder.Credential, orderID int64, o *certorder.Order) {
	if len(cred.KeyID) > 64 {
		return // not a key ID this service makes
	}
	c.fillCredential(gen, cred)
	if orderID != 0 {
		c.FillOrder(gen, cred.MemberID, orderID, o)
	}
}

// FillOrder stores the member's order orderID (o nil: the member has
// none) read under gen.
func (c *Cache) FillOrder(gen uint64, memberID, orderID int64, o *certorder.Order) {
	if o != nil && len(o.Doc) > c.maxEntry {
		return
	}
	c.c.Set(key{gen: gen, memberID: memberID, orderID: orderID}, value{order: encodeOrder(o)})
}

// fillCredential stores a credential read under gen: in the map of gen
// while it has room, else in otter. A fill of an older generation than
// the map's is dropped from the map; a newer one starts a new map.
func (c *Cache) fillCredential(gen uint64, cred certorder.Credential) {
	t := c.creds.Load()
	for ; t.gen < gen; t = c.creds.Load() {
		c.creds.CompareAndSwap(t, &credTable{gen: gen})
	}
	if t.gen == gen {
		size := int64(len(cred.KeyID) + len(cred.KeyHash) + len(cred.Member) + entryOverhead)
		if t.bytes.Add(size) <= c.credMax {
			t.m.Store(cred.KeyID, cred)
			return
		}
		t.bytes.Add(-size)
	}
	c.c.Set(key{gen: gen, keyID: cred.KeyID}, value{cred: &cred})
}

// Stats says how many entries the cache holds, and how many calls of Find
// it answered and did not.
func (c *Cache) Stats() (entries, hits, misses int64) {
	n := int64(0)
	c.creds.Load().m.Range(func(any, any) bool { n++; return true })
	return int64(c.c.EstimatedSize()) + n, c.hits.Load(), c.misses.Load()
}
