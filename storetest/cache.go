package storetest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
)

// Cache checks a store's cache of credentials and orders: server is a
// store on which the cache is turned on, admin another store on the same
// database (another process, as far as the database can tell). Every
// change admin commits is seen by server's next look-up, once
// AwaitInstances has returned where the store has it; server's own
// changes too; and what is in the cache is what FindCredential reads.
func Cache(t *testing.T, server, admin certorder.Store) { cacheChecks(t, server, admin, 0) }

// CacheFilled is Cache with the cache holding thousands of orders first:
// what it answers is byte for byte what the store holds, and every change
// is seen on the next look-up all the same.
func CacheFilled(t *testing.T, server, admin certorder.Store) {
	cacheChecks(t, server, admin, 3000)
}

func cacheChecks(t *testing.T, server, admin certorder.Store, fill int) {
	ctx := context.Background()
	cached, ok := server.(certorder.CredentialCache)
	if !ok {
		t.Fatalf("%T has no cache", server)
	}
	must(t, cached.StartCache(ctx, certorder.CacheConfig{Bytes: 1 << 20, Instance: "test server"}))
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
		if w, ok := admin.(certorder.InstanceAwaiter); ok {
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
		_, _, err := server.FindCredential(ctx, k.ID, int64(1000+i))
		must(t, err)
	}

	// The server's way: one look in the cache, then, on a miss, ReadMiss,
	// which reads the order alone when the key was cached and fills the
	// cache: the next look finds both.
	for _, id := range []int64{1, 2} {
		_, _, miss, hit := cached.CachedCredential(k.ID, id)
		if hit {
			t.Fatalf("order %d cached before it was read", id)
		}
		if miss.KeyID != k.ID || miss.OrderID != id || miss.CredHit && miss.Cred.KeyID != k.ID {
			t.Fatalf("order %d: miss %+v", id, miss)
		}
		if id == 2 && !miss.CredHit {
			t.Fatal("the key, read with order 1, is not cached")
		}
		c, o, err := cached.ReadMiss(ctx, miss)
		must(t, err)
		if c.KeyID != k.ID || c.Member != "alice" || o == nil || o.ID != id || o.Member != "alice" {
			t.Fatalf("order %d: ReadMiss gave %+v, %+v", id, c, o)
		}
		if _, o, _, hit := cached.CachedCredential(k.ID, id); !hit || o == nil || o.ID != id {
			t.Fatalf("order %d: not in the cache after ReadMiss", id)
		}
	}

	// find reads through the cache, then checks that the cache alone now
	// answers the same.
	find := func(orderID int64) (certorder.Credential, *certorder.Order) {
		t.Helper()
		c, o, err := server.FindCredential(ctx, k.ID, orderID)
		must(t, err)
		c2, o2, _, hit := cached.CachedCredential(k.ID, orderID)
		if !hit {
			t.Fatalf("order %d: not in the cache right after a read", orderID)
		}
		if c2.KeyID != c.KeyID || !bytes.Equal(c2.KeyHash, c.KeyHash) || c2.KeyRevoked != c.KeyRevoked ||
			c2.MemberID != c.MemberID || c2.Member != c.Member || c2.MemberDisabled != c.MemberDisabled {
			t.Fatalf("cached credential %+v, read %+v", c2, c)
		}
		if (o == nil) != (o2 == nil) || o != nil && (o.ID != o2.ID || o.MemberID != o2.MemberID || o.Member != o2.Member ||
			o.Certificate.CommonName != o2.Certificate.CommonName || o.Status != o2.Status || o.Certificate.ValidTill != o2.Certificate.ValidTill ||
			o.RenewedBy != o2.RenewedBy || o.CertEnd != o2.CertEnd || !bytes.Equal(o.Doc, o2.Doc)) {
			t.Fatalf("cached order %+v, read %+v", o2, o)
		}
		if o != nil { // byte for byte what a read without the cache gives
			direct, err := admin.FindOrder(ctx, orderID)
			must(t, err)
			if !bytes.Equal(direct.Doc, o2.Doc) || direct.CertEnd != o2.CertEnd {
				t.Fatalf("order %d: cached document differs from the stored one", orderID)
			}
		}
		return c, o
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
	if _, _, err := server.FindCredential(ctx, k2.ID, 2); err != nil {
		t.Fatal(err)
	}
	must(t, server.SetMemberDisabled(ctx, "alice", true))
	if w, ok := server.(certorder.InstanceAwaiter); ok {
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if unconfirmed, err := w.AwaitInstances(wctx); err != nil || len(unconfirmed) > 0 {
			t.Fatalf("AwaitInstances: %v %v", unconfirmed, err)
		}
	}
	if c, _, err := server.FindCredential(ctx, k2.ID, 2); err != nil || !c.MemberDisabled {
		t.Fatalf("own change not seen: %+v, %v", c, err)
	}
	if entries, hits, _ := cached.CacheStats(); entries == 0 || hits == 0 {
		t.Fatalf("cache stats: %d entries, %d hits", entries, hits)
	}
}
