package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/export"
)

// BenchmarkRestoreFile restores the export CERTORDER_BENCH_EXPORT (admin
// export of a loadbench store) into a new store per op; with
// -cpuprofile, where a restore's time goes. cpu-s is the process's user
// and system CPU during the restore: on a loaded machine a steadier
// figure than the time.
func BenchmarkRestoreFile(b *testing.B) {
	path := os.Getenv("CERTORDER_BENCH_EXPORT")
	if path == "" {
		b.Skip("CERTORDER_BENCH_EXPORT names an export file")
	}
	ctx := context.Background()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		c0 := processCPU()
		b.StartTimer()
		if err := s.Restore(ctx, export.Read(f)); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += processCPU() - c0
		f.Close()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
