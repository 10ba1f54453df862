package client_test

import (
	"context"
	"errors"
	"go/build"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/sqlite"
	"github.com/certorder/certorder/storetest"
)

// newService starts the real server on a temp SQLite store, with alice's
// orders 1 -> 2 -> 3 (a chain of two renewals), 4 and 11 (reissued), and bob's order 9.
func newService(t *testing.T) (endpoint, aliceKey string) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, m := range []string{"alice", "bob"} {
		if _, err := s.AddMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	text, k, err := certorder.NewKey("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddKey(ctx, "alice", k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportOrders(ctx, "alice", storetest.Orders(t, storetest.OrderJSON(1, 2, "2020-01-01"),
		storetest.OrderJSON(2, 0, "2021-01-01"), storetest.OrderJSON(3, 0, "2099-01-01"), storetest.OrderJSON(4, 0, "2099-01-01"))); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordRenewal(ctx, 2, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportOrders(ctx, "bob", storetest.Orders(t, storetest.OrderJSON(9, 0, "2099-01-01"))); err != nil {
		t.Fatal(err)
	}
	// 4 -> 5 (pending); 6 -> 7 (canceled before issuance).
	if _, err := s.ImportOrders(ctx, "alice", storetest.Orders(t, storetest.PendingJSON(5, "pending"),
		storetest.PendingJSON(7, "canceled"), storetest.OrderJSON(6, 7, "2099-01-01"))); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordRenewal(ctx, 4, 5); err != nil {
		t.Fatal(err)
	}
	// 11: certificate 501 (serial 0A01) reissued as 502 (0A02).
	for _, doc := range []string{storetest.CertJSON(11, 501, "0A01", "2026-03-01", "2026-09-16", "2029-03-01"),
		storetest.CertJSON(11, 502, "0A02", "2026-09-01", "2027-03-19", "2029-03-01")} {
		if _, err := s.ImportOrders(ctx, "alice", storetest.Orders(t, doc)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := server.New(s, server.Config{CASegment: "digicert"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/api/digicert/", text
}

func TestAgainstServer(t *testing.T) {
	t.Parallel()
	endpoint, key := newService(t)
	ctx := context.Background()
	c, err := client.New(endpoint, "alice", key)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Auth(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := c.OrderInfo(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if o.OrderID != 1 || !o.IsRenewed || o.WasRenewedByOrderID.Value != 2 || o.Certificate.CommonName != "host1.example.com" ||
		o.Certificate.UserID != "42" || o.Certificate.ReceiptID.Value != 1234 || o.Certificate.DaysRemaining.Value >= 0 ||
		o.PurchasedWildcardNames.Valid || !strings.Contains(string(o.Raw), `"OrderId":1`) {
		t.Fatalf("OrderInfo = %+v", o)
	}
	r, err := c.RenewCheck(ctx, 2)
	if err != nil || r.OrderID.Value != 2 || r.RenewedOrderID.Value != 3 {
		t.Fatalf("RenewCheck = %+v, %v", r, err)
	}
	if _, err := c.RenewCheck(ctx, 3); !errors.Is(err, client.ErrNotRenewed) {
		t.Fatalf("RenewCheck on the newest: %v", err)
	}
	cur, err := c.Current(ctx, 1)
	if err != nil || !slices.Equal(cur.Chain, []int64{1, 2, 3}) || cur.Order.OrderID != 3 || cur.Order.IsRenewed {
		t.Fatalf("Current(1) = %+v, %v", cur, err)
	}
	if !cur.Order.Issued() || cur.Order.Ended() {
		t.Errorf("Current(1): issued %v, ended %v", cur.Order.Issued(), cur.Order.Ended())
	}
	// A pending successor is the newest order; a canceled one ends the chain.
	cur, err = c.Current(ctx, 4)
	if err != nil || !slices.Equal(cur.Chain, []int64{4, 5}) || cur.Order.OrderID != 5 || cur.Order.Status != "pending" ||
		cur.Order.Issued() || cur.Order.Ended() || cur.Order.Certificate.DaysRemaining.Valid {
		t.Fatalf("Current(4) = %+v, %v", cur, err)
	}
	_, err = c.Current(ctx, 6)
	var ended *client.EndedError
	if !errors.Is(err, client.ErrOrderEnded) || !errors.As(err, &ended) || !slices.Equal(ended.Chain, []int64{6, 7}) ||
		ended.Order.Status != "canceled" || err.Error() != "client: order 6 was renewed by order 7, which is canceled" {
		t.Fatalf("Current(6): %v", err)
	}
	for _, id := range []int64{9, 99} { // bob's and nobody's
		if _, err := c.OrderInfo(ctx, id); !errors.Is(err, client.ErrNoSuchOrder) {
			t.Errorf("OrderInfo(%d): %v", id, err)
		}
		if _, err := c.Current(ctx, id); !errors.Is(err, client.ErrNoSuchOrder) {
			t.Errorf("Current(%d): %v", id, err)
		}
	}
	bad, _ := client.New(endpoint, "alice", key+"x")
	if err := bad.Auth(ctx); !errors.Is(err, client.ErrCredentialsRejected) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := bad.OrderInfo(ctx, 1); !errors.Is(err, client.ErrCredentialsRejected) || errors.Is(err, client.ErrNoSuchOrder) {
		t.Fatalf("wrong key, OrderInfo: %v", err)
	}
}

// The client package pulls in no database driver, nor anything else outside
// the standard library: every package it needs, transitively, is either
// standard or of this module.
func TestClientImports(t *testing.T) {
	t.Parallel()
	const module = "github.com/certorder/certorder"
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		pkg, err := build.Import(path, ".", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			switch {
			case strings.HasPrefix(imp, module):
				walk(imp)
			case strings.Contains(strings.Split(imp, "/")[0], "."):
				t.Errorf("%s imports %s", path, imp)
			}
		}
	}
	walk(module + "/client")
	walk(module) // the root package, which the client may use
}
