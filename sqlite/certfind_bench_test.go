package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/certorder/certorder/storetest"
)

// BenchmarkFindCertificates: admin order find on a CA's list of 100,000
// serials, all stored, 5,000 a query (docs/PERFORMANCE.md).
func BenchmarkFindCertificates(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchFindCertificates(b, s, 100_000, 5000)
}
