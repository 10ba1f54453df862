package credcache_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
)

// BenchmarkServeFull is the service's memory settings (GOGC 400, a limit
// of the cache's 64 MiB and 48 more) with a full cache and hits that
// allocate as a request does (4 KiB): it reports the collector's share of
// the CPU (gc%), the hit rate, Zipf-drawn over 1M orders, and the
// process's anonymous memory at the end (Linux).
func BenchmarkServeFull(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(112 << 20))
	c := credcache.New(64 << 20)
	defer c.Close()
	cred := credential("0123456789ab", "alice", 3)
	c.Fill(1, cred, 0, nil)
	orders := make([]*certorder.Order, 2000)
	for i := range orders {
		orders[i] = docOrder(i+1, false)
	}
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, 1_000_000-1)
	var sink []byte
	fills := 0
	serve := func() bool {
		id := int64(z.Uint64() + 1)
		_, o, _, ok := c.Find(1, cred.KeyID, id)
		if !ok {
			c.FillOrder(1, 3, id, orders[id%int64(len(orders))])
			fills++
		} else if o != nil {
			sink = append(make([]byte, 0, 4096), o.Doc...)
		}
		return ok
	}
	for full := false; !full; { // warm: fill it, until it has let a tenth of what it held go
		for range 1_000_000 {
			serve()
		}
		entries, _, _ := c.Stats()
		full = fills > int(entries)*11/10
	}
	sample := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(sample)
	gc0, all0 := sample[0].Value.Float64(), sample[1].Value.Float64()
	hits := 0
	b.ResetTimer()
	for b.Loop() {
		if serve() {
			hits++
		}
	}
	b.StopTimer()
	metrics.Read(sample)
	_ = sink
	entries, _, _ := c.Stats()
	b.ReportMetric(100*(sample[0].Value.Float64()-gc0)/(sample[1].Value.Float64()-all0), "gc%")
	b.ReportMetric(100*float64(hits)/float64(b.N), "hit%")
	b.ReportMetric(float64(entries), "orders")
	if kB := anonKB(); kB > 0 {
		b.ReportMetric(float64(kB)/1024, "anonMiB")
	}
	runtime.KeepAlive(c)
}

// anonKB is the process's anonymous resident memory (RssAnon), 0 where
// /proc does not say.
func anonKB() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kB int
		if n, _ := fmt.Sscanf(sc.Text(), "RssAnon: %d kB", &kB); n == 1 {
			return kB
		}
	}
	return 0
}
