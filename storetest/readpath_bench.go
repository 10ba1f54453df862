package storetest

import (
	"context"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/storekit"
)

// BenchReadPath times the store's reads on OrderInfo's path, for their
// allocations above all: the credential with its order (FindCredential),
// the cache's read of an order it does not hold (the source's
// MemberOrder), and FindOrder (the web page's, the admin's).
func BenchReadPath(b *testing.B, s storekit.Store) {
	ctx := context.Background()
	if _, err := s.AddMember(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	_, key, err := certorder.NewKey("bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := s.AddKey(ctx, "bench", key); err != nil {
		b.Fatal(err)
	}
	if _, err := s.ImportOrders(ctx, "bench", Orders(b, OrderJSON(7, 0, "2030-01-01"))); err != nil {
		b.Fatal(err)
	}
	sourcer, ok := s.(credcache.Sourcer)
	if !ok {
		b.Fatal("the store keeps no cache source")
	}
	src, err := sourcer.CacheSource(ctx, credcache.SourceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	cred, _, err := s.FindCredential(ctx, key.ID, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("FindCredential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, o, err := s.FindCredential(ctx, key.ID, 7); err != nil || o == nil {
				b.Fatal(o, err)
			}
		}
	})
	b.Run("MemberOrder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if o, err := src.MemberOrder(ctx, cred, 7); err != nil || o == nil {
				b.Fatal(o, err)
			}
		}
	})
	b.Run("FindOrder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.FindOrder(ctx, 7); err != nil {
				b.Fatal(err)
			}
		}
	})
}
