package server_test

import (
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
)

// BenchmarkAPIDuringWebFlood is an API client's latency (OrderInfo, one
// request at a time from 127.0.0.3) while two clients flood the member web
// page from 127.0.0.2 over loopback (the confirmation page and sign-in, as
// the review did: issue 46 measured the API's p90 going from ~1 to 43.6
// ms), with the page's limits on and off, and with no flood. It reports
// the API's p50 and p90 and the flood's requests a second. The flood ends
// with the benchmark, and sends at most 200,000 requests.
func BenchmarkAPIDuringWebFlood(b *testing.B) {
	for _, bench := range []struct {
		name  string
		flood bool
		web   float64 // WebRate; 0: the page's limits off
	}{{"quiet", false, 10}, {"flood", true, 10}, {"flood-unlimited", true, 0}} {
		b.Run(bench.name, func(b *testing.B) {
			f := newFixture(b, testdb.SQLite(b), server.Config{Web: true, NoAccessLog: true, Limits: server.Limits{
				WebRate: bench.web, WebBurst: 100, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
			base := strings.TrimSuffix(f.url, "/api/digicert/")
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			flooded := 0
			start := time.Now()
			if bench.flood {
				for i := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c := &http.Client{Transport: from("127.0.0.2")}
						for n := 0; n < 100_000; n++ {
							select {
							case <-stop:
								return
							default:
							}
							var resp *http.Response
							var err error
							if i == 0 {
								resp, err = c.Get(base + "/notices/confirm?t=c.1.2.x")
							} else {
								resp, err = c.Post(base+"/signin", "application/x-www-form-urlencoded", strings.NewReader("name=alice&key=x&csrf=x"))
							}
							if err != nil {
								return
							}
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							mu.Lock()
							flooded++
							mu.Unlock()
						}
					}()
				}
			}
			api := &http.Client{Transport: from("127.0.0.3")}
			body := f.alice("OrderInfo", "orderId", "1001")
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				resp, err := api.Post(f.url, "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("OrderInfo: %d", resp.StatusCode)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds()), "p90-µs")
			b.ReportMetric(float64(flooded)/time.Since(start).Seconds(), "flood-req/s")
		})
	}
}
