package postgres_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/postgres"
)

// BenchmarkAppendAudit writes the audit trail as the server's writer does
// under load, in batches of 4096 entries; ns/op is per entry, the
// database's work included (it runs on the same machine).
func BenchmarkAppendAudit(b *testing.B) {
	s, err := postgres.Open(context.Background(), testdb.Postgres(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := make([]certorder.AuditEntry, 4096)
	t0 := time.Now()
	for i := range batch {
		batch[i] = certorder.AuditEntry{Member: "member-" + strconv.Itoa(i%50), KeyID: "0123456789ab", Action: "OrderInfo",
			OrderID: int64(100000 + i), ClientIP: "192.0.2." + strconv.Itoa(i%200)}
	}
	b.ResetTimer()
	for n := 0; n < b.N; n += len(batch) {
		for i := range batch {
			batch[i].Time = t0.Add(time.Duration(n+i) * time.Microsecond)
		}
		if err := s.AppendAudit(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
}
