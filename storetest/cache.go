package storetest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/storekit"
)

// Cache checks the cache of credentials and orders in front of a store,
// kept exact by the store's source (credcache.Sourcer): server is the
// store the cache is put in front of, admin another store on the same
// database (another process, as far as the database can tell). Every
// change admin commits is seen by the cache's next look-up, once
// AwaitInstances has returned where the store has it; server's own
// changes too; and what the cache answers is what the store reads.
func Cache(t *testing.T, server, admin storekit.Store) { cacheChecks(t, server, admin, 0) }

// CacheFilled is Cache with the cache holding thousands of orders first:
// what it answers is byte for byte what the store holds, and every change
// is seen on the next look-up all the same.
func CacheFilled(t *testing.T, server, admin storekit.Store) {
	cacheChecks(t, server, admin, 3000)
}

func cacheChecks(t *testing.T, server, admin storekit.Store, fill int) {
	ctx := context.Background()
	sourcer, ok := server.(credcache.Sourcer)
	if !ok {
		t.Fatalf("%T keeps no cache exact", server)
	}
	src, err := sourcer.CacheSource(ctx, credcache.SourceConfig{Instance: "test server"})
	must(t, err)
	cached := credcache.NewStore(server, src, 1<<20, 5*time.Second)
	hits := func() int64 { _, h, _ := cached.Stats(); return h }
	for _, name := range []string{"alice", "bob"} {
		_, err := admin.AddMember(ctx, name)
		must(t, err)
	}
	_, k, err := certorder.NewKey("")
	must(t, err)
	must(t, admin.AddKey(ctx, "alice", k))
	_, err = admin.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 0, "2030-01-01"), OrderJSON(2, 0, "2030-01-01")))
	must(t, err)
	_, err = admin.ImportOrders(ctx, "bob", Orders(t, OrderJSON(9, 0, "2030-01-01")))
	must(t, err)
	settle := func() {
		t.Helper()
		if w, ok := admin.(storekit.InstanceAwaiter); ok {
			wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			unconfirmed, err := w.AwaitInstances(wctx)
			must(t, err)
			if len(unconfirmed) > 0 {
				t.Fatalf("instances did not confirm: %v", unconfirmed)
			}
		}
	}
	if fill > 0 {
		docs := make([]string, fill)
		for i := range docs {
			docs[i] = OrderJSON(int64(1000+i), 0, "2030-01-01")
		}
		_, err = admin.ImportOrders(ctx, "alice", Orders(t, docs...))
		must(t, err)
	}
	settle()
	for i := range fill { // read through the cache, which holds them after
		_, _, err := cached.FindCredential(ctx, k.ID, int64(1000+i))
		must(t, err)
	}

	// find reads through the cache (a miss fills it: the credential with
	// the order, or the order alone when the credential is cached), then
	// again, which the cache alone answers (a hit), the same as the
	// store reads it.
	find := func(orderID int64) (certorder.Credential, *certorder.Order) {
		t.Helper()
		c, o, err := cached.FindCredential(ctx, k.ID, orderID)
		must(t, err)
		before := hits()
		c2, o2, err := cached.FindCredential(ctx, k.ID, orderID)
		must(t, err)
		if hits() != before+1 {
			t.Fatalf("order %d: not in the cache right after a read", orderID)
		}
		direct, do, err := server.FindCredential(ctx, k.ID, orderID)
		must(t, err)
		for _, got := range []certorder.Credential{c, c2} {
			if got.KeyID != direct.KeyID || !bytes.Equal(got.KeyHash, direct.KeyHash) || got.KeyRevoked != direct.KeyRevoked ||
				got.MemberID != direct.MemberID || got.Member != direct.Member || got.MemberDisabled != direct.MemberDisabled {
				t.Fatalf("cached credential %+v, read %+v", got, direct)
			}
		}
		for _, got := range []*certorder.Order{o, o2} {
			if (got == nil) != (do == nil) || got != nil && (got.ID != do.ID || got.MemberID != do.MemberID || got.Member != do.Member ||
				got.Certificate.CommonName != do.Certificate.CommonName || got.Status != do.Status ||
				got.Certificate.ValidTill != do.Certificate.ValidTill || got.RenewedBy != do.RenewedBy || got.CertEnd != do.CertEnd ||
				!bytes.Equal(got.Doc, do.Doc)) {
				t.Fatalf("cached order %+v, read %+v", got, do)
			}
		}
		return c2, o2
	}
	if _, o := find(1); o == nil || o.ID != 1 || o.RenewedBy != 0 {
		t.Fatalf("order 1: %+v", o)
	}
	// The credential cached, the order read alone: the member's own, and
	// another member's (never read: it reads as missing).
	if _, o := find(2); o == nil || o.ID != 2 || o.Member != "alice" {
		t.Fatalf("order 2: %+v", o)
	}
	if _, o := find(9); o != nil {
		t.Fatalf("bob's order 9 read for alice: %+v", o)
	}
	if _, o := find(0); o != nil {
		t.Fatal("an order without asking")
	}

	// Each change by the other store is seen on the next look-up.
	must(t, admin.RecordRenewal(ctx, 1, 2))
	settle()
	if _, o := find(1); o == nil || o.RenewedBy != 2 {
		t.Fatalf("renewal not seen: %+v", o)
	}
	_, err = admin.ImportOrders(ctx, "alice", Orders(t, strings.Replace(OrderJSON(1, 2, "2031-06-30"), `"issued"`, `"revoked"`, 1)))
	must(t, err)
	settle()
	if _, o := find(1); o == nil || o.Certificate.ValidTill != "2031-06-30" || !bytes.Contains(o.Doc, []byte(`"revoked"`)) {
		t.Fatalf("re-imported order not seen: %+v", o)
	}
	must(t, admin.SetMemberDisabled(ctx, "alice", true))
	settle()
	if c, _ := find(1); !c.MemberDisabled {
		t.Fatal("disabled member not seen")
	}
	must(t, admin.SetMemberDisabled(ctx, "alice", false))
	settle()
	if c, _ := find(1); c.MemberDisabled {
		t.Fatal("enabled member not seen")
	}
	must(t, admin.RevokeKey(ctx, k.ID))
	settle()
	if c, _ := find(1); !c.KeyRevoked {
		t.Fatal("revoked key not seen")
	}
	// The store's own changes too.
	_, k2, err := certorder.NewKey("")
	must(t, err)
	must(t, server.AddKey(ctx, "alice", k2))
	if _, _, err := cached.FindCredential(ctx, k2.ID, 2); err != nil {
		t.Fatal(err)
	}
	must(t, server.SetMemberDisabled(ctx, "alice", true))
	if w, ok := server.(storekit.InstanceAwaiter); ok {
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if unconfirmed, err := w.AwaitInstances(wctx); err != nil || len(unconfirmed) > 0 {
			t.Fatalf("AwaitInstances: %v %v", unconfirmed, err)
		}
	}
	if c, _, err := cached.FindCredential(ctx, k2.ID, 2); err != nil || !c.MemberDisabled {
		t.Fatalf("own change not seen: %+v, %v", c, err)
	}
	if entries, hits, _ := cached.Stats(); entries == 0 || hits == 0 {
		t.Fatalf("cache stats: %d entries, %d hits", entries, hits)
	}
}
