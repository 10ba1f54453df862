package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/stores"
	"github.com/certorder/certorder/storetest"
)

// auditRetention is set by BenchmarkHandlerAudit, cacheBytes by BenchmarkHandlerCached.
var (
	auditRetention time.Duration
	cacheBytes     int
)

// benchHandler is the service on a SQLite store of n orders, and alice's key.
func benchHandler(b *testing.B, n int) (http.Handler, string) {
	return benchServer(b, n, cacheBytes, server.Config{NoAccessLog: true, AuditRetention: auditRetention})
}

// benchStore is a SQLite store of n orders for alice, and alice's key.
func benchStore(b testing.TB, n int) (storekit.Store, string) {
	ctx := context.Background()
	s, err := stores.Open(ctx, testdb.SQLite(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.AddMember(ctx, "alice"); err != nil {
		b.Fatal(err)
	}
	text, k, _ := certorder.NewKey("")
	if err := s.AddKey(ctx, "alice", k); err != nil {
		b.Fatal(err)
	}
	docs := make([]string, n)
	for i := range docs {
		docs[i] = storetest.OrderJSON(int64(i+1), 0, "2030-01-01")
	}
	if _, err := s.ImportOrders(ctx, "alice", storetest.Orders(b, docs...)); err != nil {
		b.Fatal(err)
	}
	return s, text
}

// drive sends requests to h from parallel goroutines; request i is
// action with key, for order i.
func drive(b *testing.B, h http.Handler, key string, action func(i int) string) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			body := `{"AccessName":"alice","AccessKey":"` + key + `","action":"` + action(i) + `","orderId":` + strconv.Itoa(1+i%10000) + `}`
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/api/digicert/", strings.NewReader(body)))
		}
	})
}

func always(action string) func(int) string { return func(int) string { return action } }

// BenchmarkHandler measures one request through the handler, without the
// network: where the service's own time goes (go test -cpuprofile).
func BenchmarkHandler(b *testing.B) {
	h, key := benchHandler(b, 10000)
	wrongKey := key[:len(key)-4] + "aaaa"
	for _, bench := range []struct{ name, action, key string }{
		{"Auth", "Auth", key}, {"AuthFail", "Auth", wrongKey}, {"OrderInfo", "OrderInfo", key}, {"RenewCheck", "RenewCheck", key},
	} {
		b.Run(bench.name, func(b *testing.B) { drive(b, h, bench.key, always(bench.action)) })
	}
}

// BenchmarkHandlerMixed alternates Auth and OrderInfo, which once made
// SQLite re-prepare its statement on every request.
func BenchmarkHandlerMixed(b *testing.B) {
	h, key := benchHandler(b, 10000)
	drive(b, h, key, func(i int) string {
		if i%2 == 0 {
			return "Auth"
		}
		return "OrderInfo"
	})
}

// BenchmarkHandlerAudit is BenchmarkHandler/OrderInfo with the audit trail on.
func BenchmarkHandlerAudit(b *testing.B) {
	auditRetention = time.Hour
	defer func() { auditRetention = 0 }()
	h, key := benchHandler(b, 10000)
	drive(b, h, key, always("OrderInfo"))
}

// BenchmarkHandlerCached is BenchmarkHandler with the store's cache on
// (every order fits): the service's own cost per request, beside the store.
func BenchmarkHandlerCached(b *testing.B) {
	cacheBytes = 64 << 20
	defer func() { cacheBytes = 0 }()
	h, key := benchHandler(b, 10000)
	wrongKey := key[:len(key)-4] + "aaaa"
	for _, bench := range []struct{ name, action, key string }{
		{"Auth", "Auth", key}, {"AuthFail", "Auth", wrongKey}, {"OrderInfo", "OrderInfo", key}, {"RenewCheck", "RenewCheck", key},
	} {
		b.Run(bench.name, func(b *testing.B) { drive(b, h, bench.key, always(bench.action)) })
	}
}

// BenchmarkHandlerCacheMiss is BenchmarkHandlerCached/OrderInfo with the
// smallest cache: the key stays cached, most orders are read from the
// store (the order alone, after one look in the cache).
func BenchmarkHandlerCacheMiss(b *testing.B) {
	cacheBytes = credcache.MinBytes
	defer func() { cacheBytes = 0 }()
	h, key := benchHandler(b, 10000)
	drive(b, h, key, always("OrderInfo"))
}
