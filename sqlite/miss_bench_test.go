package sqlite

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
)

// BenchmarkMiss reads orders of member 1 the cache does not hold, as a
// request whose credential is cached does, from the store at
// CERTORDER_BENCH_DB (cmd/loadbench -state keeps one: bench-1000000.db),
// whose orders are numbered 1 to CERTORDER_BENCH_ORDERS. It only reads.
func BenchmarkMiss(b *testing.B) {
	path := os.Getenv("CERTORDER_BENCH_DB")
	n, _ := strconv.Atoi(os.Getenv("CERTORDER_BENCH_ORDERS"))
	if path == "" || n == 0 {
		b.Skip("CERTORDER_BENCH_DB and CERTORDER_BENCH_ORDERS name a loadbench store")
	}
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	src, err := s.CacheSource(ctx, credcache.SourceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	cred := certorder.Credential{MemberID: 1, Member: "bench"}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // as the server bounds a read
			o, err := src.MemberOrder(ctx, cred, 1+rand.Int64N(int64(n)))
			cancel()
			if err != nil || o == nil {
				b.Fatal(o, err)
			}
		}
	})
}
