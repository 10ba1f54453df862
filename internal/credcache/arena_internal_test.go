package credcache

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"testing"
)

// A key whose hash finds another key's entry (two keys sharing a hash) is
// a miss, not the other key's value; an entry larger than a shard's ring
// is not stored and leaves the others in place.
func TestArenaSharedHashAndSize(t *testing.T) {
	a := newArena(MinBytes)
	a.set([]byte("key a"), []byte("value a"))
	sa, ha := a.shard([]byte("key a"))
	var b []byte
	for i := 0; ; i++ { // a key of the same shard
		b = fmt.Appendf(nil, "key b%d", i)
		if s, _ := a.shard(b); s == sa {
			break
		}
	}
	hb := maphash.Bytes(a.seed, b)
	sa.index[hb] = sa.index[ha] // as if b had a's hash
	if v, ok := a.get(nil, b); ok {
		t.Fatalf("key b answered %q", v)
	}
	if v, ok := a.get(nil, []byte("key a")); !ok || string(v) != "value a" {
		t.Fatalf("key a: %q, %v", v, ok)
	}
	delete(sa.index, hb)

	a.set([]byte("big"), bytes.Repeat([]byte{1}, len(sa.ring)))
	if _, ok := a.get(nil, []byte("big")); ok {
		t.Fatal("an entry larger than a ring is held")
	}
	if v, ok := a.get(nil, []byte("key a")); !ok || string(v) != "value a" {
		t.Fatalf("key a after the large entry: %q, %v", v, ok)
	}
	if n := a.len(); n != 1 {
		t.Fatalf("%d entries", n)
	}
}

// A shard holds at most maxEntries entries, and the newest ones: the
// oldest leave first.
func TestArenaFirstInFirstOut(t *testing.T) {
	a := newArena(MinBytes)
	s := &a.shards[0]
	var keys [][]byte
	for i := 0; len(keys) < 3*s.maxEntries; i++ {
		k := fmt.Appendf(nil, "%d", i)
		if sk, _ := a.shard(k); sk == s {
			keys = append(keys, k)
			a.set(k, k)
		}
	}
	if len(s.index) != s.maxEntries {
		t.Fatalf("%d entries in a shard of %d at most", len(s.index), s.maxEntries)
	}
	for i, k := range keys {
		v, ok := a.get(nil, k)
		if want := i >= len(keys)-s.maxEntries; ok != want || ok && !bytes.Equal(v, k) {
			t.Fatalf("key %d of %d: %q, %v", i, len(keys), v, ok)
		}
	}
}
