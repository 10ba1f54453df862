package sqlite_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/sqlite"
)

// BenchmarkAppendAudit writes the audit trail as the server's writer does,
// in batches of 512 entries; ns/op is per entry: the trail's CPU cost per request.
func BenchmarkAppendAudit(b *testing.B) {
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := make([]certorder.AuditEntry, 512)
	t0 := time.Now()
	for i := range batch {
		batch[i] = certorder.AuditEntry{Member: "member-" + strconv.Itoa(i%50), KeyID: "0123456789ab", Action: "OrderInfo",
			OrderID: int64(100000 + i), ClientIP: "192.0.2." + strconv.Itoa(i%200)}
	}
	b.ResetTimer()
	n := 0
	for n < b.N {
		for i := range batch {
			batch[i].Time = t0.Add(time.Duration(n+i) * time.Microsecond)
		}
		if err := s.AppendAudit(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
		n += len(batch)
	}
}
