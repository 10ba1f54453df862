package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/postgres"
	"github.com/certorder/certorder/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storekit.Store {
		s, err := postgres.Open(context.Background(), testdb.Postgres(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Several instances starting at once on an empty database: the advisory
// lock lets one migrate and the others find the schema done.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(context.Background(), dsn)
			if err == nil {
				_, err = s.Members(context.Background())
				s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// The advisory locks are per schema: two instances on one schema share the
// sync lock, a certorder in another schema of the database has its own.
func TestLocksPerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	open := func(dsn string) *postgres.Store {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	one := testdb.Postgres(t)
	a, a2, b := open(one), open(one), open(testdb.Postgres(t))
	lock, ok, err := a.LockSync(ctx)
	if err != nil || !ok {
		t.Fatalf("the first instance did not take the sync lock: %v", err)
	}
	defer lock.Release()
	if other, ok, err := a2.LockSync(ctx); err != nil || ok {
		if other != nil {
			other.Release()
		}
		t.Fatalf("a second instance on the same schema took the sync lock too (err %v)", err)
	}
	other, ok, err := b.LockSync(ctx)
	if err != nil || !ok {
		t.Fatalf("an instance on another schema waited for the first schema's sync lock: %v", err)
	}
	other.Release()
}

func TestBadDSN(t *testing.T) {
	t.Parallel()
	if _, err := postgres.Open(context.Background(), "postgres://u:secretpw@127.0.0.1:1/x?connect_timeout=1"); err == nil {
		t.Fatal("opened a database nobody serves")
	} else if want := "secretpw"; strings.Contains(err.Error(), want) {
		t.Fatalf("error shows the password: %v", err)
	}
}

// Audit rows written before segments are still read and pruned.
func TestLegacyAudit(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	storetest.LegacyAudit(t, s, func(e certorder.AuditEntry) error {
		_, err := conn.Exec(context.Background(), `INSERT INTO audit_log (at, member, key_id, action, order_id, outcome, client_ip, count)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, e.Time, e.Member, e.KeyID, e.Action, e.OrderID, e.Outcome, e.ClientIP, e.Count)
		return err
	})
}

func TestCache(t *testing.T) {
	t.Parallel()
	for name, check := range map[string]func(*testing.T, storekit.Store, storekit.Store){
		"plain": storetest.Cache, "filled": storetest.CacheFilled, "certificates": storetest.CertificateCache,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.Postgres(t)
			open := func() storekit.Store {
				s, err := postgres.Open(context.Background(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			check(t, open(), open())
		})
	}
}

// The notification connection drops: the cache is bypassed at once, a
// change made meanwhile is seen, AwaitInstances does not wait in vain, and
// the cache is back once the connection is.
func TestCacheListenerDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	server, admin := open(), open()
	src, err := server.CacheSource(ctx, credcache.SourceConfig{Instance: "under test"})
	if err != nil {
		t.Fatal(err)
	}
	cached := credcache.NewStore(server, src, 1<<20, 5*time.Second)
	_, k, _ := certorder.NewKey("")
	hit := func() bool { // a look-up answered from memory
		_, before, _ := cached.Stats()
		if _, _, err := cached.FindCredential(ctx, k.ID, 0); err != nil {
			t.Fatal(err)
		}
		_, after, _ := cached.Stats()
		return after > before
	}
	if _, err := admin.AddMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := admin.AddKey(ctx, "alice", k); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if unconfirmed, err := admin.AwaitInstances(wctx); err != nil || len(unconfirmed) > 0 {
		t.Fatalf("AwaitInstances: %v %v", unconfirmed, err) // else a late notification may empty the cache below
	}
	if _, _, err := cached.FindCredential(ctx, k.ID, 0); err != nil {
		t.Fatal(err)
	}
	if !hit() {
		t.Fatal("not cached")
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed bool
	if err := conn.QueryRow(ctx, `SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a JOIN cache_instances i
		ON a.application_name = 'certorder cache listener ' || i.id`).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminating the listener: %v %v", killed, err)
	}
	// Bypassed as soon as the instance notices (for at least the
	// reconnection's first backoff, 100 ms), then back: poll both, bounded.
	if !poll.Within(5*time.Second, func() bool { _, ok := src.Generation(); return !ok }) {
		t.Fatal("the cache answered with its listener gone")
	}
	if err := admin.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if unconfirmed, err := admin.AwaitInstances(wctx); err != nil || len(unconfirmed) > 0 {
		t.Fatalf("AwaitInstances: %v %v", unconfirmed, err)
	}
	if c, _, err := cached.FindCredential(ctx, k.ID, 0); err != nil || !c.KeyRevoked {
		t.Fatalf("revocation during the outage not seen: %+v %v", c, err)
	}
	if !poll.Within(10*time.Second, func() bool {
		cached.FindCredential(ctx, k.ID, 0)
		c, _, _ := cached.FindCredential(ctx, k.ID, 0)
		return hit() && c.KeyRevoked
	}) {
		t.Fatal("the cache did not come back after the listener reconnected")
	}
}

// Many requests missing the cache at once: each gets its own member's
// order, byte for byte, and another member's order reads as missing, as
// one read at a time would answer. (Written for misses read in batches of
// o.id = ANY($1), which were measured and dropped: docs/PERFORMANCE.md.)
func TestCacheConcurrentMisses(t *testing.T) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, m := range []string{"alice", "bob"} {
		if _, err := s.AddMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	_, k, _ := certorder.NewKey("")
	if err := s.AddKey(ctx, "alice", k); err != nil {
		t.Fatal(err)
	}
	var alice, bob []string
	for i := int64(1); i <= 300; i++ {
		if i <= 250 {
			alice = append(alice, storetest.OrderJSON(i, 0, "2030-01-01"))
		} else {
			bob = append(bob, storetest.OrderJSON(i, 0, "2030-01-01"))
		}
	}
	if _, err := s.ImportOrders(ctx, "alice", storetest.Orders(t, alice...)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportOrders(ctx, "bob", storetest.Orders(t, bob...)); err != nil {
		t.Fatal(err)
	}
	src, err := s.CacheSource(ctx, credcache.SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cached := credcache.NewStore(s, src, 1<<20, 5*time.Second)
	if _, _, err := cached.FindCredential(ctx, k.ID, 0); err != nil { // the credential cached
		t.Fatal(err)
	}
	want := map[int64][]byte{}
	for id := int64(1); id <= 250; id++ {
		o, err := s.FindOrder(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = o.Doc
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 32 {
		wg.Go(func() {
			for i := range 40 {
				id := int64(1 + (g*37+i*13)%320) // 301-320: no such order
				_, o, err := cached.FindCredential(ctx, k.ID, id)
				switch {
				case err != nil:
					errs <- err.Error()
				case id <= 250 && (o == nil || o.ID != id || o.Member != "alice" || !bytes.Equal(o.Doc, want[id])):
					errs <- "alice's order wrong"
				case id > 250 && o != nil:
					errs <- "another member's order or a missing one answered"
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestDocumentFormats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	storetest.DocumentFormats(t, false, func() storekit.Store {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, func(id int64) (format, length int64) {
		if err := conn.QueryRow(ctx, `SELECT doc_format, length(doc) FROM orders WHERE id = $1`, id).Scan(&format, &length); err != nil {
			t.Fatal(err)
		}
		return format, length
	}, func(id int64, doc []byte, format int64) {
		if _, err := conn.Exec(ctx, `UPDATE orders SET doc = $1, doc_format = $2 WHERE id = $3`, doc, format, id); err != nil {
			t.Fatal(err)
		}
	})
}
