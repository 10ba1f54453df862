package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/sqlite"
)

// BenchmarkSmallWrite: one job enqueued a transaction (as the CertCentral
// webhook's receiver and the notices do), into a store of the given page
// size with 20,000 jobs already queued: the cost of a small transaction,
// which a larger page makes larger (each page it changes is written whole
// to the WAL).
func BenchmarkSmallWrite(b *testing.B) {
	for _, size := range []int{4096, 8192, 16384} {
		b.Run(fmt.Sprintf("page=%d", size), func(b *testing.B) {
			ctx := context.Background()
			path := testdb.SQLite(b)
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				b.Fatal(err)
			}
			for _, q := range []string{fmt.Sprintf(`PRAGMA page_size = %d`, size), `PRAGMA journal_mode = WAL`} {
				if _, err := db.Exec(q); err != nil {
					b.Fatal(err)
				}
			}
			db.Close()
			s, err := sqlite.Open(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			job := func(i int) queue.Job {
				return queue.Job{Kind: queue.KindCertCentralEvent, SubjectID: int64(i), Key: fmt.Sprint(i),
					Payload: []byte(fmt.Sprintf(`{"event":"certificate_issued","order_id":%d,"received_at":"2026-11-28T10:00:00Z"}`, i))}
			}
			for i := 0; i < 20000; i += 500 {
				jobs := make([]queue.Job, 500)
				for j := range jobs {
					jobs[j] = job(1_000_000 + i + j)
				}
				if _, err := s.Enqueue(ctx, jobs...); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Enqueue(ctx, job(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
