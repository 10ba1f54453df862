package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
)

// Access taken away under load, with the cache on: workers hammer OrderInfo
// on every serving instance (two on PostgreSQL, one SQLite process) while
// `admin key revoke`, then `admin member disable`, runs in another
// process; not one request sent after the command returned is answered
// 200. The instances' cache metrics show that answers did come from the
// cache.
func TestRevocationUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test: not with -short")
	}
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		bin := buildBinary(t)
		admin := newStoreCLI(t, dsn)
		admin.ok("admin", "member", "add", "alice")
		admin.ok("admin", "member", "add", "bob")
		aliceKey := lastLine(admin.ok("admin", "key", "create", "alice"))
		bobKey := lastLine(admin.ok("admin", "key", "create", "bob"))
		const orders = 200
		for member, first := range map[string]int{"alice": 1, "bob": 1001} {
			docs := make([]string, orders)
			for i := range docs {
				docs[i] = orderJSON(first + i)
			}
			if _, errOut, err := admin.run("["+strings.Join(docs, ",")+"]", "admin", "order", "import", "--member", member, "-"); err != nil {
				t.Fatalf("import: %v %s", err, errOut)
			}
		}
		instances := 1
		if strings.HasPrefix(dsn, "postgres") {
			instances = 2
		}
		var endpoints, metrics []string
		for range instances {
			metricsAddr := freeAddr(t)
			p := startProcess(t, bin, "serve", "--addr", "127.0.0.1:0", "--db", dsn, "--metrics-addr", metricsAddr,
				"--access-log=false", "--rate-limit", "0", "--ip-rate-limit", "0", "--auth-fail-limit", "0",
				"--auth-fail-ip-limit", "0", "--max-per-ip", "0")
			endpoints, metrics = append(endpoints, p.endpoint), append(metrics, metricsAddr)
		}
		hitsBefore := make([]float64, instances)
		for i, m := range metrics {
			hitsBefore[i] = scrape(t, m, "certorder_cache_hits_total")
		}

		takeAway(t, endpoints, "alice", aliceKey, 1, func() {
			admin.ok("admin", "key", "revoke", aliceKey[4:16])
		})
		takeAway(t, endpoints, "bob", bobKey, 1001, func() {
			admin.ok("admin", "member", "disable", "bob")
		})
		for i, m := range metrics {
			if hits := scrape(t, m, "certorder_cache_hits_total") - hitsBefore[i]; hits < 100 {
				t.Errorf("instance %d: %v cache hits under load: the cache was not in use", i, hits)
			}
		}
	})
}

// takeAway runs 8 workers sending OrderInfo for name's orders (first ..
// first+199) to the endpoints in turn, runs command once 1000 of them
// were answered, and checks that every request sent after it returned was
// refused, and that requests were sent, and answered, before and after.
// The load goes on until 2,000 requests sent after the command returned
// were refused, or 10 seconds after it returned if that comes first.
func takeAway(t *testing.T, endpoints []string, name, key string, first int, command func()) {
	t.Helper()
	var mu sync.Mutex
	var returned time.Time // when command returned; zero before
	var stale []string
	okBefore, refusedAfter := 0, 0
	var wg sync.WaitGroup
	// The load runs until 2,000 refusals or 10 seconds after the command
	// returned, however long it took (a busy machine slows it). A stale
	// cache answers at once: 2,000 requests across the instances tell as
	// much as the 12,000 or so of 2 seconds did, for a sixth of the CPU.
	// (2 seconds gave 78 refusals, under the 100 asserted, when CI's full
	// suite ran beside it; alone, 2,000 come within half a second.)
	over := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !returned.IsZero() && (refusedAfter >= 2000 || time.Since(returned) > 10*time.Second)
	}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Timeout: 10 * time.Second}
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for n := 0; n < 200000 && !over(); n++ {
				endpoint := endpoints[n%len(endpoints)]
				id := strconv.Itoa(first + rng.IntN(200))
				sent := time.Now()
				resp, err := hc.Post(endpoint, "application/json", strings.NewReader(request(name, key, "OrderInfo", id)))
				if err != nil {
					t.Errorf("%s: %v", endpoint, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				after := !returned.IsZero() && sent.After(returned)
				switch {
				case after && resp.StatusCode == 200:
					stale = append(stale, fmt.Sprintf("%s order %s sent %v after the command returned: 200",
						endpoint, id, sent.Sub(returned)))
				case after && resp.StatusCode == 401:
					refusedAfter++
				case !after && resp.StatusCode == 200 && returned.IsZero():
					okBefore++
				}
				mu.Unlock()
			}
		}()
	}
	// Until the load is under way, the orders read and cached: 1000
	// answers before the command.
	warm := poll.Within(time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return okBefore >= 1000
	})
	if warm {
		command()
	}
	mu.Lock()
	returned = time.Now()
	mu.Unlock()
	wg.Wait()
	if !warm {
		t.Fatalf("only %d answers in a minute", okBefore)
	}
	t.Logf("%s: %d answered before the command, %d refused after it, %d answered after it", name, okBefore, refusedAfter, len(stale))
	if len(stale) > 0 {
		t.Fatalf("answered after the command returned:\n%s", strings.Join(stale[:min(len(stale), 20)], "\n"))
	}
	if okBefore < 100 || refusedAfter < 100 {
		t.Fatalf("too little load to tell: %d answered before, %d refused after", okBefore, refusedAfter)
	}
}

// scrape reads one metric's value from a /metrics page.
func scrape(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// awaitRounds returns once the worker (webhooks, notices) of the serve
// whose metrics are at addr has ended two more rounds than it had at the
// call: everything it could see then it has seen, and done what it does
// with it. So "nothing more came" is tested after the work, not after a
// guess at how long it takes.
func awaitRounds(t *testing.T, addr, worker string) {
	t.Helper()
	name := `certorder_worker_rounds_total{worker="` + worker + `"}`
	start := scrape(t, addr, name)
	if !poll.Within(30*time.Second, func() bool { return scrape(t, addr, name) >= start+2 }) {
		t.Fatalf("the %s worker at %s did not go round twice in 30 s", worker, addr)
	}
}

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
