// Package credcache is the cache in front of a store's FindCredential:
// credentials by key ID and each member's orders by number (absent ones
// too), bounded in bytes. Store (store.go) is the decorator the API reads
// through: one FindCredential, answered from memory or from the store.
//
// Orders (and credentials beyond a map of the current generation's) are
// kept in an arena (arena.go): rings of bytes written first in, first
// out, with an index without pointers, so that the collector has a few
// dozen objects to mark however many entries it holds; orders are
// compressed (S2 with a dictionary made of the first documents cached).
// In otter (W-TinyLFU, each entry an object) a 64 MiB cache held 37,000
// of loadbench's orders, 85% hits over 1M orders drawn Zipf-like, the
// collector 23% of the CPU (-bench ServeFull); compressed there, 213,000
// orders but the collector at 62% (docs/PERFORMANCE.md, issue 25). Here:
// 302,000 orders (181 bytes each, the index included; 42,000 of 1,070
// bytes with a real, random CSR), 92% hits although first in, first out
// admits every order, the collector 3.4%; uncompressed, the arena held
// 35,000 for 80% hits. A hit takes 0.74-0.83 µs instead of 0.37 (-bench
// Hit; 0.64 uncompressed): it decodes into memory of its own, which the
// caller may keep as long as it likes (the arena's bytes are written over
// as the rings turn).
//
// It knows nothing of invalidation. Every entry is stored under a
// generation that the store gives: a number that changes whenever anything
// the cache holds may have changed (sqlite: the WAL-index header; postgres:
// a notification). A store reads the generation before it reads the
// database, and fills under that generation; a look-up finds only entries
// of the generation current when it looks (the generation is part of every
// key). So an entry filled from a read that a later commit made stale is
// never served, and emptying the cache is moving to the next generation:
// old entries are never found again and leave as new ones come.
package credcache

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/klauspost/compress/s2"

	"github.com/certorder/certorder"
)

// DefaultBytes is the cache's default bound: with the service's own
// memory, under 150 MB of anonymous memory whatever the store holds
// (docs/PERFORMANCE.md).
const DefaultBytes = 64 << 20

// MinBytes is the smallest cache.
const MinBytes = 512 << 10

// entryOverhead is what a credential costs in the map beyond its bytes,
// roughly: the map's entry, the key, the allocator's rounding.
const entryOverhead = 320

// Miss is what a look-up found before it missed: what was asked, and the
// credential when only the order was missing.
type Miss struct {
	KeyID   string
	OrderID int64
	Cred    certorder.Credential
	CredHit bool // Cred is the cached credential: only the order is read
}

// Cache holds credentials and orders. The zero value is not usable; use New.
//
// Credentials, few and asked for on every request, are kept in a map of
// the current generation, up to a sixteenth of the bytes; beyond, and
// orders, in the arena.
type Cache struct {
	a            *arena
	maxEntry     int
	creds        atomic.Pointer[credTable]
	credMax      int64        // bytes the credential map may hold
	hits, misses atomic.Int64 // of Find: requests answered from the cache, and not

	// Documents are stored compressed with dict, made of the first
	// documents cached (sample), then fixed.
	dict     atomic.Pointer[s2.Dict]
	sampleMu sync.Mutex
	sample   []byte
}

// dictBytes is how much of the first documents cached makes the
// dictionary: some 25 of CertCentral's size. What a document shares with
// others (its keys, the CA's names, the product, dates) is found in it;
// what is its own (serial number, thumbprint, the CSR) is not.
const dictBytes = 32 << 10

// dictMemory is the dictionary's memory, counted in the cache's bytes:
// its bytes and the table its encoder makes of them (1<<14 uint16s).
const dictMemory = dictBytes + 32<<10

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
	c := &Cache{a: newArena(bytes - bytes/16 - dictMemory), maxEntry: bytes / 1024, credMax: int64(bytes / 16)}
	c.creds.Store(&credTable{})
	return c
}

// Close does nothing: the cache has no goroutines (otter's had).
func (c *Cache) Close() {}

// Find returns the credential of keyID and, when orderID is not 0, its
// member's order orderID (nil when the member has none), as
// FindCredential would, if the cache holds both for generation gen (hit).
// The order is the caller's. On a miss it returns what it found, for
// ReadMiss.
func (c *Cache) Find(gen uint64, keyID string, orderID int64) (certorder.Credential, *certorder.Order, Miss, bool) {
	cred, ok := c.Credential(gen, keyID)
	if !ok {
		c.misses.Add(1)
		return certorder.Credential{}, nil, Miss{KeyID: keyID, OrderID: orderID}, false
	}
	if orderID == 0 {
		c.hits.Add(1)
		return cred, nil, Miss{}, true
	}
	o, ok := c.Order(gen, cred.MemberID, orderID)
	if !ok {
		c.misses.Add(1)
		return certorder.Credential{}, nil, Miss{KeyID: keyID, OrderID: orderID, Cred: cred, CredHit: true}, false
	}
	c.hits.Add(1)
	return cred, o, Miss{}, true
}

// ReadMiss reads what Find missed, with readCredential (the credential
// and the order, as FindCredential reads them) or, when the credential was
// cached, readOrder (its member's order alone), and fills the cache under
// gen, the generation read before the database is.
func (c *Cache) ReadMiss(ctx context.Context, gen uint64, m Miss,
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

// Keys of the arena: a kind, the generation, then an order's member and
// number or a credential's key ID.
const (
	orderKey = 'o'
	credKey  = 'c'
)

func orderKeyOf(gen uint64, memberID, orderID int64) [25]byte {
	var k [25]byte
	k[0] = orderKey
	binary.LittleEndian.PutUint64(k[1:], gen)
	binary.LittleEndian.PutUint64(k[9:], uint64(memberID))
	binary.LittleEndian.PutUint64(k[17:], uint64(orderID))
	return k
}

// What an order's value starts with.
const (
	absent     = 0 // the member has no such order
	plain      = 1 // the record follows
	compressed = 2 // the record follows compressed with the cache's dictionary
)

// Order returns the member's order orderID if the cache holds it for
// generation gen (nil: the member has no such order). It is the caller's.
func (c *Cache) Order(gen uint64, memberID, orderID int64) (*certorder.Order, bool) {
	k := orderKeyOf(gen, memberID, orderID)
	scratch := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(scratch)
	v, ok := c.a.get((*scratch)[:0], k[:])
	if ok && cap(v) > cap(*scratch) && cap(v) <= 64<<10 {
		*scratch = v
	}
	if !ok || len(v) == 0 {
		return nil, false
	}
	var rec []byte
	switch v[0] {
	case absent:
		return nil, len(v) == 1
	case plain:
		rec = append([]byte(nil), v[1:]...)
	case compressed:
		d := c.dict.Load()
		if d == nil {
			return nil, false
		}
		var err error
		if rec, err = d.Decode(nil, v[1:]); err != nil {
			return nil, false
		}
	default:
		return nil, false
	}
	return decodeOrder(rec, memberID)
}

var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// An order's record: the order number, the renewal, the certificate's
// end, the lengths of valid_till, common name, status and member name (as
// uvarints: loadbench's orders took 149 bytes compressed with them as
// fixed-size numbers, 125 as uvarints), those texts, and the document.
func appendRecord(b []byte, o *certorder.Order) []byte {
	texts := [...]string{o.Certificate.ValidTill, o.Certificate.CommonName, o.Status, o.Member}
	b = binary.AppendUvarint(b, uint64(o.ID))
	b = binary.AppendUvarint(b, uint64(o.RenewedBy))
	b = binary.AppendUvarint(b, uint64(o.CertEnd))
	for _, t := range texts {
		b = binary.AppendUvarint(b, uint64(len(t)))
	}
	for _, t := range texts {
		b = append(b, t...)
	}
	return append(b, o.Doc...)
}

// decodeOrder makes the Order of a record, its texts and document in b,
// which nothing else holds.
func decodeOrder(b []byte, memberID int64) (*certorder.Order, bool) {
	var nums [7]uint64
	for i := range nums {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, false
		}
		nums[i], b = v, b[n:]
	}
	o := &certorder.Order{ID: int64(nums[0]), RenewedBy: int64(nums[1]), CertEnd: int(nums[2]), MemberID: memberID}
	var texts [4]string
	for i, n := range nums[3:] {
		if n > uint64(len(b)) {
			return nil, false
		}
		texts[i] = unsafe.String(unsafe.SliceData(b), int(n)) // b is never written: the document after the texts is capped
		b = b[n:]
	}
	o.Certificate.ValidTill, o.Certificate.CommonName, o.Status, o.Member = texts[0], texts[1], texts[2], texts[3]
	o.Doc = b[:len(b):len(b)]
	if o.CertEnd <= 0 || o.CertEnd >= len(o.Doc) {
		return nil, false
	}
	return o, true
}

// Credential looks keyID up in the map, then in the arena.
func (c *Cache) Credential(gen uint64, keyID string) (certorder.Credential, bool) {
	if t := c.creds.Load(); t.gen == gen {
		if v, ok := t.m.Load(keyID); ok {
			return v.(certorder.Credential), true
		}
	}
	if len(keyID) > 64 {
		return certorder.Credential{}, false
	}
	var kb [1 + 8 + 64]byte
	k := credKeyOf(kb[:0], gen, keyID)
	var vb [128]byte
	v, ok := c.a.get(vb[:0], k)
	if !ok {
		return certorder.Credential{}, false
	}
	return decodeCredential(keyID, v)
}

func credKeyOf(b []byte, gen uint64, keyID string) []byte {
	b = append(b, credKey)
	b = binary.LittleEndian.AppendUint64(b, gen)
	return append(b, keyID...)
}

// A credential's value: flags (1: the key is revoked, 2: the member is
// disabled), the member's number, the key hash's length, the key hash and
// the member's name.
func appendCredential(b []byte, cred certorder.Credential) []byte {
	var flags byte
	if cred.KeyRevoked {
		flags |= 1
	}
	if cred.MemberDisabled {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(cred.MemberID))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(cred.KeyHash)))
	b = append(b, cred.KeyHash...)
	return append(b, cred.Member...)
}

func decodeCredential(keyID string, v []byte) (certorder.Credential, bool) {
	if len(v) < 13 {
		return certorder.Credential{}, false
	}
	n := int(binary.LittleEndian.Uint32(v[9:]))
	if n > len(v)-13 {
		return certorder.Credential{}, false
	}
	return certorder.Credential{
		KeyID:          keyID,
		KeyHash:        append([]byte(nil), v[13:13+n]...),
		KeyRevoked:     v[0]&1 != 0,
		MemberID:       int64(binary.LittleEndian.Uint64(v[1:])),
		Member:         string(v[13+n:]),
		MemberDisabled: v[0]&2 != 0,
	}, true
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
	k := orderKeyOf(gen, memberID, orderID)
	if o == nil {
		c.a.set(k[:], []byte{absent})
		return
	}
	if len(o.Doc) > c.maxEntry {
		return
	}
	scratch := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(scratch)
	v := appendRecord(append((*scratch)[:0], plain), o)
	if d := c.dictionary(o.Doc); d != nil {
		enc := recordPool.Get().(*[]byte)
		defer recordPool.Put(enc)
		z := d.Encode((*enc)[:cap(*enc)], v[1:])
		if len(z)+1 < len(v) {
			v = append(append(v[:0], compressed), z...)
		}
		if cap(z) <= 64<<10 {
			*enc = z[:0]
		}
	}
	c.a.set(k[:], v)
	if cap(v) <= 64<<10 {
		*scratch = v[:0]
	}
}

var recordPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// dictionary returns the dictionary, or keeps doc to make it of and
// returns nil while it is not made yet.
func (c *Cache) dictionary(doc []byte) *s2.Dict {
	if d := c.dict.Load(); d != nil {
		return d
	}
	c.sampleMu.Lock()
	defer c.sampleMu.Unlock()
	if d := c.dict.Load(); d != nil {
		return d
	}
	if c.sample == nil {
		c.sample = make([]byte, 0, dictBytes+16) // s2 wants 16 bytes more, else copies
	}
	c.sample = append(c.sample, doc[:min(len(doc), dictBytes-len(c.sample))]...)
	if len(c.sample) < dictBytes {
		return nil
	}
	d := s2.MakeDict(c.sample, c.sample[:16])
	c.sample = nil
	c.dict.Store(d)
	return d
}

// fillCredential stores a credential read under gen: in the map of gen
// while it has room, else in the arena. A fill of an older generation
// than the map's is dropped from the map; a newer one starts a new map.
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
	var kb [1 + 8 + 64]byte
	var vb [256]byte
	c.a.set(credKeyOf(kb[:0], gen, cred.KeyID), appendCredential(vb[:0], cred))
}

// Stats says how many entries the cache holds, and how many calls of Find
// it answered and did not.
func (c *Cache) Stats() (entries, hits, misses int64) {
	n := int64(0)
	c.creds.Load().m.Range(func(any, any) bool { n++; return true })
	return int64(c.a.len()) + n, c.hits.Load(), c.misses.Load()
}
