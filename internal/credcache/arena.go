package credcache

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
)

// arena is a cache of byte strings whose memory the garbage collector does
// not have to mark entry by entry: each of its shards is one []byte ring,
// written in turn (first in, first out), and an index without pointers
// (map[uint64]uint32, a key's hash to its entry's offset in the ring). A
// million entries are a few dozen objects, none with pointers, where otter
// made each entry a node to mark (docs/PERFORMANCE.md, issue 25).
//
// Hand-written rather than fastcache (VictoriaMetrics/fastcache v1.13.2,
// the same design), for what it does with our sizes (measured, filled
// with 25-byte keys): its 512 buckets of 64 KiB chunks took 32 MiB when
// asked for 512 KiB (MinBytes) or 1 MiB (the stores' tests), 96 MiB when
// asked for 65; and its index is bound by nothing but the chunks: 64 MiB
// of absent orders (1-byte values) made 3.8 million entries and 133 MB
// of index on the Go heap besides. Here an entry's index cost counts in
// the bytes (indexCost, maxEntries), and the rings are on the Go heap,
// inside the service's memory limit (the cache and 48 MiB), where
// fastcache maps its chunks outside.
//
// An entry is its length (4 bytes), its key's length (1 byte), the key
// and the value. An entry is never split at the ring's end: the space
// left there is skipped (a filler entry with an empty key, when there is
// room for its header). The index holds only entries still in the ring:
// an entry leaves it when the ring's tail passes it, so a look-up that
// finds a key's hash finds that entry's bytes, and its key is compared
// (a hash shared by two keys is a miss, never the other key's value).
type arena struct {
	seed   maphash.Seed
	shards []shard
}

type shard struct {
	mu         sync.RWMutex
	index      map[uint64]uint32 // hash of a key -> offset of its entry in ring
	ring       []byte
	head, tail uint64 // entries are the bytes [tail, head), counted from the first written, at ring[i % len(ring)]
	maxEntries int    // entries in the index at most: what bounds the index's memory
}

const (
	entryHeader = 5
	// indexCost is the memory an entry costs in a shard's index: Go's map
	// of uint64 to uint32 takes 24 bytes an entry once grown, 48 as
	// entries come and go (its deleted slots; measured after 20 laps of
	// first in, first out, with or without a size hint at make).
	indexCost = 48
	// minEntryBytes is the entry size the index is sized for: smaller
	// entries (absent orders, credentials) are bound by the index, not
	// the ring. loadbench's orders take 156 bytes (compressed), orders
	// with a real, random CSR some 1,100: with 160, a 64 MiB cache holds
	// about 300,000 of the first or 41,000 of the second (192: 262,000
	// and 43,000).
	minEntryBytes = 160
	arenaShards   = 16
)

// newArena returns an arena of about bytes, index included.
func newArena(bytes int) *arena {
	a := &arena{seed: maphash.MakeSeed(), shards: make([]shard, arenaShards)}
	per := bytes / arenaShards
	for per > 1<<31 { // offsets are uint32
		a.shards = make([]shard, 2*len(a.shards))
		per = bytes / len(a.shards)
	}
	for i := range a.shards {
		s := &a.shards[i]
		s.maxEntries = per / (minEntryBytes + indexCost)
		s.ring = make([]byte, per-s.maxEntries*indexCost)
		s.index = make(map[uint64]uint32)
	}
	return a
}

func (a *arena) shard(key []byte) (*shard, uint64) {
	h := maphash.Bytes(a.seed, key)
	return &a.shards[h%uint64(len(a.shards))], h
}

// get appends key's value to dst.
func (a *arena) get(dst, key []byte) ([]byte, bool) {
	s, h := a.shard(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	off, ok := s.index[h]
	if !ok {
		return dst, false
	}
	e := s.ring[off:]
	n, kl := binary.LittleEndian.Uint32(e), int(e[4])
	if string(e[entryHeader:entryHeader+kl]) != string(key) {
		return dst, false
	}
	return append(dst, e[entryHeader+kl:n]...), true
}

// set stores key's value (key of 1 to 255 bytes), unless the entry would
// take more than a shard's ring.
func (a *arena) set(key, value []byte) {
	s, h := a.shard(key)
	n := entryHeader + len(key) + len(value)
	size := uint64(len(s.ring))
	if len(key) == 0 || len(key) > 255 || uint64(n) > size {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if off := s.head % size; off+uint64(n) > size { // skip to the next lap
		s.evict(a.seed, s.head+size-off, 0)
		if size-off >= entryHeader {
			binary.LittleEndian.PutUint32(s.ring[off:], uint32(size-off))
			s.ring[off+4] = 0
		}
		s.head += size - off
	}
	s.evict(a.seed, s.head+uint64(n), 1)
	off := s.head % size
	e := s.ring[off : off+uint64(n)]
	binary.LittleEndian.PutUint32(e, uint32(n))
	e[4] = byte(len(key))
	copy(e[entryHeader:], key)
	copy(e[entryHeader+len(key):], value)
	s.index[h] = uint32(off)
	s.head += uint64(n)
}

// evict drops the oldest entries until the ring has room for the bytes up
// to end and the index for more entries.
func (s *shard) evict(seed maphash.Seed, end uint64, more int) {
	size := uint64(len(s.ring))
	for s.tail < s.head && (s.tail+size < end || len(s.index)+more > s.maxEntries) {
		off := s.tail % size
		if size-off < entryHeader { // too short for a filler: skipped
			s.tail += size - off
			continue
		}
		e := s.ring[off:]
		if kl := int(e[4]); kl > 0 { // not a filler
			h := maphash.Bytes(seed, e[entryHeader:entryHeader+kl])
			if at, ok := s.index[h]; ok && at == uint32(off) { // else set again since, or lost to a hash it shares
				delete(s.index, h)
			}
		}
		s.tail += uint64(binary.LittleEndian.Uint32(e))
	}
}

// len is the number of entries held.
func (a *arena) len() int {
	n := 0
	for i := range a.shards {
		s := &a.shards[i]
		s.mu.RLock()
		n += len(s.index)
		s.mu.RUnlock()
	}
	return n
}
