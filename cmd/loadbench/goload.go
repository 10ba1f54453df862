package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// A request generator returns a body and whether its answer should be 200.
type generator func(rng *rand.Rand, draw func() int) (body []byte, wantOK bool)

// scenarios are the Go client's requests, as wrkScript makes them.
func scenarios(key string, n int) map[string]generator {
	auth := []byte(`{"AccessName":"bench","AccessKey":"` + key + `","action":"Auth"}`)
	wrongKey := []byte(`{"AccessName":"bench","AccessKey":"` + key[:len(key)-4] + `aaaa","action":"Auth"}`)
	info := func(_ *rand.Rand, draw func() int) ([]byte, bool) { return orderInfo(key, draw()), true }
	renew := func(_ *rand.Rand, draw func() int) ([]byte, bool) {
		id := draw()
		if id%2 == 0 {
			id-- // odd orders are renewed by the next one
		}
		return []byte(`{"AccessName":"bench","AccessKey":"` + key + `","action":"RenewCheck","orderId":` + strconv.Itoa(id) + `}`), id < n
	}
	return map[string]generator{
		"bare":       info,
		"orderinfo":  info,
		"auth":       func(*rand.Rand, func() int) ([]byte, bool) { return auth, true },
		"authfail":   func(*rand.Rand, func() int) ([]byte, bool) { return wrongKey, false },
		"renewcheck": renew,
		"mix": func(rng *rand.Rand, draw func() int) ([]byte, bool) {
			switch p := rng.IntN(100); {
			case p < 5:
				return wrongKey, false
			case p < 10:
				return orderInfo(key, n+1+rng.IntN(n)), false // no such order
			case p < 50:
				return info(rng, draw)
			case p < 80:
				return renew(rng, draw)
			default:
				return auth, true
			}
		},
	}
}

// drawer draws order numbers as wrkScript does: a rank, uniform or by
// Zipf's law (s=1.1), through the same permutation.
func drawer(rng *rand.Rand, n int, access string) func() int {
	order := func(k int) int { return k*7919%n + 1 }
	if access == "zipf" {
		z := rand.NewZipf(rng, 1.1, 1, uint64(n-1))
		return func() int { return order(int(z.Uint64())) }
	}
	return func() int { return order(rng.IntN(n)) }
}

// goLoad drives url with conns workers for d and measures every request.
func goLoad(url string, gen generator, n int, access string, conns, seed int, d time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	transport := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	var mu sync.Mutex
	var all []time.Duration
	var r result
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(seed)))
			draw := drawer(rng, n, access)
			lat := make([]time.Duration, 0, 1<<16)
			var failed, transport int
			for ctx.Err() == nil {
				body, _ := gen(rng, draw)
				t0 := time.Now()
				resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					if ctx.Err() == nil {
						transport++
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				if resp.StatusCode >= 400 {
					failed++
				}
			}
			mu.Lock()
			all = append(all, lat...)
			r.failures += failed
			r.socketErrors += transport
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(float64(len(all))*p))]
	}
	r.requests = len(all)
	r.rps, r.p50, r.p99 = float64(len(all))/elapsed.Seconds(), pct(0.50), pct(0.99)
	return r
}
