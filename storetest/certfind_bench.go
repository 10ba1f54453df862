package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// BenchFindCertificates times what admin order find does with a CA's list
// of n serial numbers: n stored orders (imported untimed, each with its
// certificate), then all n serials looked up, batch a query. It reports
// the serials answered a second.
func BenchFindCertificates(b *testing.B, s storekit.Store, n, batch int) {
	ctx := context.Background()
	if _, err := s.AddMember(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	docs := make([]string, n)
	serials := make([]string, n)
	for i := range n {
		serials[i] = fmt.Sprintf("1F%014X", i)
		docs[i] = CertJSON(int64(1+i), int64(1_000_000+i), serials[i], "2026-03-01", "2026-09-16", "2029-03-01")
	}
	if _, err := s.ImportOrders(ctx, "bench", Orders(b, docs...)); err != nil {
		b.Fatal(err)
	}
	for i, serial := range serials {
		serials[i] = certorder.SerialKey(serial)
	}
	b.ResetTimer()
	for b.Loop() {
		found := 0
		for at := 0; at < n; at += batch {
			ms, err := s.FindCertificates(ctx, certorder.CertificateQuery{Serials: serials[at:min(at+batch, n)]})
			if err != nil {
				b.Fatal(err)
			}
			found += len(ms)
		}
		if found != n {
			b.Fatalf("found %d of %d", found, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "serials/s")
}
