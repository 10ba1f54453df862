package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/orderdoc"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/storetest"
)

// holdImport starts an import for alice that stays open, holding its
// transaction (on SQLite, the store file's one write lock), until release
// is called; it returns once the transaction has written an order.
func holdImport(t *testing.T, store storekit.Store) (release func()) {
	t.Helper()
	started, stop, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	first, err := orderdoc.Parse([]byte(storetest.OrderJSON(7001, 0, "2030-01-01")))
	if err != nil {
		t.Fatal(err)
	}
	second, err := orderdoc.Parse([]byte(storetest.OrderJSON(7002, 0, "2030-01-01")))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := store.ImportOrders(context.Background(), "alice", func(yield func(*certorder.Order, error) bool) {
			if !yield(first, nil) {
				return
			}
			close(started) // the first order is written: the transaction holds the lock
			select {
			case <-stop:
			case <-time.After(30 * time.Second):
			}
			yield(second, nil)
		})
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the import ended early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the import did not start")
	}
	return func() {
		close(stop)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the held import: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the held import did not finish")
		}
	}
}

// A web sign-in (which writes a session) answers at once while a long
// import holds its transaction open: on SQLite, sessions are in a file of
// their own.
func TestWebSignInDuringImport(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		f := newFixture(t, dsn, server.Config{Web: true})
		base := strings.TrimSuffix(f.url, "/api/digicert/")
		b := newBrowser(t, base, nil)
		form := b.get("/signin")
		release := holdImport(t, f.store)
		start := time.Now()
		p := b.post("/signin", map[string][]string{"csrf": {form.csrf(t)}, "name": {"alice"}, "key": {f.aliceKey}})
		took := time.Since(start)
		orders := b.get("/orders")
		release()
		if p.status != http.StatusSeeOther || took > time.Second {
			t.Fatalf("sign-in during an import: %d after %v", p.status, took)
		}
		if orders.status != 200 {
			t.Fatalf("orders during an import: %d", orders.status)
		}
		t.Logf("sign-in during an import answered in %v", took)
	})
}

// BenchmarkOrdersPage measures the orders page of a member with 25,000
// orders (renewed ones among them), first page and a deep one, through
// HTTP on loopback, on both backends:
//
//	CERTORDER_TEST_POSTGRES=... go test -run '^$' -bench OrdersPage -benchtime 30x ./server/
func BenchmarkOrdersPage(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			dsn := testdb.SQLite(b)
			if backend == "postgres" {
				dsn = testdb.Postgres(b)
			}
			f := newFixture(b, dsn, server.Config{Web: true})
			const n = 25000
			docs := make([]string, 0, n)
			for i := range n {
				renewedBy := int64(0)
				if i%5 == 0 {
					renewedBy = int64(100000 + i + 1) // every fifth order renewed by the next
				}
				docs = append(docs, storetest.OrderJSON(int64(100000+i), renewedBy, fmt.Sprintf("20%02d-%02d-%02d", 26+i%5, 1+i%12, 1+i%28)))
			}
			start := time.Now()
			if _, err := f.store.ImportOrders(context.Background(), "alice", storetest.Orders(b, docs...)); err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: imported %d orders in %v", backend, n, time.Since(start))
			br := newBrowser(b, strings.TrimSuffix(f.url, "/api/digicert/"), nil)
			br.signIn("alice", f.aliceKey)
			pages := func(stage string) {
				for _, path := range []string{"/orders", "/orders?sort=expiry", "/orders?renewed=1&page=900", "/orders?q=host12345", "/timeline"} {
					b.Run(stage+" "+strings.NewReplacer("/", "", "?", " ", "&", " ").Replace(path), func(b *testing.B) {
						for b.Loop() {
							if p := br.get(path); p.status != 200 {
								b.Fatalf("%s: %d", path, p.status)
							}
						}
					})
				}
			}
			pages("fresh")
			if backend == "postgres" {
				// Right after a large import PostgreSQL's visibility map is
				// empty, so the count reads the table; autovacuum soon
				// settles it, as VACUUM does here.
				conn, err := pgx.Connect(context.Background(), dsn)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close(context.Background())
				if _, err := conn.Exec(context.Background(), "VACUUM ANALYZE orders"); err != nil {
					b.Fatal(err)
				}
				pages("vacuumed")
			}
		})
	}
}
