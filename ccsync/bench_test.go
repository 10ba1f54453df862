//go:build unix

package ccsync_test

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/testdb"
)

func benchOrders(b *testing.B) int {
	n := 100000
	if v := os.Getenv("CERTORDER_BENCH_ORDERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("CERTORDER_BENCH_ORDERS=%q is not a positive number", v)
		}
	}
	return n
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFirstSync is the first sync of N upstream orders (100,000
// unless CERTORDER_BENCH_ORDERS says otherwise) into SQLite, run with
// -bench FirstSync -benchtime 1x. "limits" keeps DigiCert's documented
// limits on a fake clock shared by the simulator and the client, and
// reports the time the run would wait on the limiter for real;
// "nolimits" reports the real time and CPU the run costs with the limits
// off. Both report requests per order.
func BenchmarkFirstSync(b *testing.B) {
	n := benchOrders(b)
	for _, limited := range []bool{true, false} {
		name := "nolimits"
		if limited {
			name = "limits"
		}
		b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				var e *env
				if limited {
					e = newEnv(b, testdb.SQLite(b), digicerttest.Options{})
				} else {
					e = newEnv(b, testdb.SQLite(b), digicerttest.Options{NoLimits: true}, digicert.WithLimits())
				}
				if _, err := e.sim.Generate(n, 1); err != nil {
					b.Fatal(err)
				}
				e.members("alice", "bob")
				e.link("alice", 10001)
				e.link("bob", 10002)
				cpu0 := cpuTime()
				b.StartTimer()
				rep := e.sync(ccsync.Options{})
				b.StopTimer()
				cpu := cpuTime() - cpu0
				b.ReportMetric(float64(rep.Requests)/float64(n), "requests/order")
				b.ReportMetric(rep.LimiterWait.Hours(), "limiter-wait-hours")
				b.ReportMetric(cpu.Seconds(), "cpu-seconds")
				if v := e.sim.Violations(); len(v) != 0 {
					b.Fatalf("%d requests broke the limits", len(v))
				}
				b.Logf("%s; cpu %v (process: simulator, client and store together)", rep.Line(false), cpu.Round(time.Millisecond))
				b.StartTimer()
			}
		})
	}
}
