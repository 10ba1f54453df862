package postgres

import (
	"context"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/storetest"
)

// BenchmarkReadPath: the reads of OrderInfo's path (storetest.BenchReadPath).
func BenchmarkReadPath(b *testing.B) {
	s, err := Open(context.Background(), testdb.Postgres(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchReadPath(b, s)
}
