package credcache_test

import (
	"testing"

	"github.com/certorder/certorder/internal/credcache"
)

// BenchmarkHit is a hit's time: an order of loadbench's shape found and
// decoded.
func BenchmarkHit(b *testing.B) {
	c := credcache.New(64 << 20)
	defer c.Close()
	cred := credential("0123456789ab", "alice", 3)
	c.Fill(1, cred, 0, nil)
	for i := 1; i <= 1000; i++ {
		c.FillOrder(1, 3, int64(i), docOrder(i, false))
	}
	i := 0
	for b.Loop() {
		i = i%1000 + 1
		if _, o, _, ok := c.Find(1, cred.KeyID, int64(i)); !ok || o == nil {
			b.Fatal("missed")
		}
	}
}
