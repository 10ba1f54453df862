package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/importfile"
)

// BenchmarkImportFile imports the file CERTORDER_BENCH_IMPORT (cmd/loadbench
// orders N FILE writes one) into a new store per op. cpu-s is the process's
// user and system CPU during the import: on a loaded machine a steadier
// figure than the time. With -cpuprofile, where the import's time goes.
func BenchmarkImportFile(b *testing.B) {
	path := os.Getenv("CERTORDER_BENCH_IMPORT")
	if path == "" {
		b.Skip("CERTORDER_BENCH_IMPORT names an import file")
	}
	orders := 0
	benchIO(b, path, func(ctx context.Context, s *Store) error {
		_, err := s.AddMember(ctx, "bench")
		return err
	}, func(ctx context.Context, s *Store, f *os.File) error {
		n, err := s.ImportOrders(ctx, "bench", importfile.Decode(f))
		orders += n
		return err
	})
	b.ReportMetric(float64(orders)/b.Elapsed().Seconds(), "orders/s")
}

// BenchmarkRestoreFile restores the export CERTORDER_BENCH_EXPORT (admin
// export of a loadbench store) into a new store per op, with the figures of
// BenchmarkImportFile.
func BenchmarkRestoreFile(b *testing.B) {
	path := os.Getenv("CERTORDER_BENCH_EXPORT")
	if path == "" {
		b.Skip("CERTORDER_BENCH_EXPORT names an export file")
	}
	benchIO(b, path, nil, func(ctx context.Context, s *Store, f *os.File) error {
		return s.Restore(ctx, export.Read(f))
	})
}

// benchIO times op on the file at path, in a new store per op that setup
// (if not nil) prepares untimed, and reports the process's CPU an op.
func benchIO(b *testing.B, path string, setup func(context.Context, *Store) error, op func(context.Context, *Store, *os.File) error) {
	ctx := context.Background()
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		if setup != nil {
			if err := setup(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		c0 := processCPU()
		b.StartTimer()
		if err := op(ctx, s, f); err != nil {
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
