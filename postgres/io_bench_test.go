package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/importfile"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/postgres"
)

// BenchmarkImportFile imports the file CERTORDER_BENCH_IMPORT (cmd/loadbench
// orders N FILE writes one) into a new schema per op. cpu-s is this
// process's CPU during the import, server-cpu-s that of the PostgreSQL
// backends of its store (read from /proc: PostgreSQL on this machine); on
// a loaded machine steadier figures than the time. With -cpuprofile, where
// the client's time goes.
func BenchmarkImportFile(b *testing.B) {
	path := os.Getenv("CERTORDER_BENCH_IMPORT")
	if path == "" {
		b.Skip("CERTORDER_BENCH_IMPORT names an import file")
	}
	benchIO(b, func(ctx context.Context, s *postgres.Store) error {
		if _, err := s.AddMember(ctx, "bench"); err != nil {
			return err
		}
		return nil
	}, func(ctx context.Context, s *postgres.Store) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = s.ImportOrders(ctx, "bench", importfile.Decode(f))
		return err
	})
}

// BenchmarkRestoreFile restores the export CERTORDER_BENCH_EXPORT into a
// new schema per op, with the figures of BenchmarkImportFile.
func BenchmarkRestoreFile(b *testing.B) {
	path := os.Getenv("CERTORDER_BENCH_EXPORT")
	if path == "" {
		b.Skip("CERTORDER_BENCH_EXPORT names an export file")
	}
	benchIO(b, nil, func(ctx context.Context, s *postgres.Store) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return s.Restore(ctx, export.Read(f))
	})
}

func benchIO(b *testing.B, setup, op func(context.Context, *postgres.Store) error) {
	ctx := context.Background()
	var cpu, server time.Duration
	for b.Loop() {
		b.StopTimer()
		name := fmt.Sprintf("certorder_bench_%d", time.Now().UnixNano())
		dsn := testdb.WithParam(testdb.Postgres(b), "application_name", name)
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		if setup != nil {
			if err := setup(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		conn, err := pgx.Connect(ctx, os.Getenv(testdb.EnvDSN))
		if err != nil {
			b.Fatal(err)
		}
		s0, c0 := backendsCPU(b, conn, name), processCPU()
		b.StartTimer()
		if err := op(ctx, s); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += processCPU() - c0
		server += backendsCPU(b, conn, name) - s0
		conn.Close(ctx)
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(server.Seconds()/float64(b.N), "server-cpu-s/op")
}

// backendsCPU is the CPU time used so far by the backends whose
// application_name is name.
func backendsCPU(b *testing.B, conn *pgx.Conn, name string) time.Duration {
	rows, _ := conn.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, name)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // not on this machine, or gone
		}
		// Fields after the command's closing parenthesis: utime and stime
		// are the 14th and 15th of the whole line, in clock ticks (100 a second).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * 10 * time.Millisecond
	}
	return total
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var _ storekit.Store = (*postgres.Store)(nil)
