package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/storetest"
)

// BenchmarkCertificateCheck sets CertificateCheck's cost beside
// OrderInfo's, both through the handler with the store's cache on, on a
// SQLite store of 10,000 orders each with its certificate, each asked for
// once before the timing (issue 46: CertificateCheck, never cached, cost
// 5.6-6.2 OrderInfos).
func BenchmarkCertificateCheck(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	s, err := stores.Open(ctx, testdb.SQLite(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.AddMember(ctx, "alice"); err != nil {
		b.Fatal(err)
	}
	key, k, _ := certorder.NewKey("")
	if err := s.AddKey(ctx, "alice", k); err != nil {
		b.Fatal(err)
	}
	docs := make([]string, n)
	for i := range docs {
		docs[i] = storetest.CertJSON(int64(1+i), int64(100000+i), fmt.Sprintf("1F%06X", i), "2026-03-01", "2026-09-16", "2029-03-01")
	}
	if _, err := s.ImportOrders(ctx, "alice", storetest.Orders(b, docs...)); err != nil {
		b.Fatal(err)
	}
	src, err := s.(credcache.Sourcer).CacheSource(ctx, credcache.SourceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	creds := credcache.NewStore(s, src, 64<<20, server.DefaultStoreTimeout)
	h, err := server.New(s, server.Config{CASegment: "digicert", NoAccessLog: true, Credentials: creds,
		Certificates: creds.Certificates(s)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	for _, bench := range []struct {
		name string
		ask  func(i int) string // the request's own parameters
	}{
		{"OrderInfo", func(i int) string { return fmt.Sprintf(`"action":"OrderInfo","orderId":%d`, 1+i%n) }},
		{"CertificateCheck", func(i int) string {
			return fmt.Sprintf(`"action":"CertificateCheck","serial_number":"1F%06X"`, i%n)
		}},
		{"CertificateCheckMissing", func(i int) string {
			return fmt.Sprintf(`"action":"CertificateCheck","serial_number":"2F%06X"`, i%n)
		}},
	} {
		call := func(b *testing.B, i int) {
			body := `{"AccessName":"alice","AccessKey":"` + key + `",` + bench.ask(i) + `}`
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/digicert/", strings.NewReader(body)))
			if rec.Code != http.StatusOK && !strings.HasSuffix(bench.name, "Missing") {
				b.Fatalf("%s: %d %s", bench.name, rec.Code, rec.Body)
			}
		}
		b.Run(bench.name, func(b *testing.B) {
			for i := range n { // each asked once before: the steady state, where a cache holds what it can
				call(b, i)
			}
			b.ResetTimer()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					call(b, i)
				}
			})
		})
	}
}
