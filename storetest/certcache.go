package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/internal/storekit"
)

// CertificateCache checks CertificateCheck's look-ups through the cache in
// front of server (credcache.Store.Certificates), kept exact as the orders
// are: admin is another store on the same database. A repeated look-up is
// answered from memory, with what the store reads; every change admin
// commits to a history or an order (a reissue, a revocation, a certificate
// newly imported where none was found) is seen on the next look-up, once
// AwaitInstances has returned where the store has it; another member's
// certificate is never answered; the operator's look-ups are not cached.
func CertificateCache(t *testing.T, server, admin storekit.Store) {
	ctx := context.Background()
	src, err := server.(credcache.Sourcer).CacheSource(ctx, credcache.SourceConfig{Instance: "test server"})
	must(t, err)
	cached := credcache.NewStore(server, src, 1<<20, 5*time.Second)
	certs := cached.Certificates(server)
	hits := func() int64 { _, h, _ := cached.Stats(); return h }
	alice, err := admin.AddMember(ctx, "alice")
	must(t, err)
	bob, err := admin.AddMember(ctx, "bob")
	must(t, err)
	doc := func(id, certID int64, serial, orderStatus string) string {
		d := CertJSON(id, certID, serial, "2026-03-01", "2026-09-16", "2029-03-01")
		return strings.Replace(d, `},"status":"issued"`, `},"status":"`+orderStatus+`"`, 1)
	}
	_, err = admin.ImportOrders(ctx, "alice", Orders(t, doc(1, 501, "0A01", "issued")))
	must(t, err)
	_, err = admin.ImportOrders(ctx, "bob", Orders(t, doc(2, 601, "0B01", "issued")))
	must(t, err)
	settle := func() {
		t.Helper()
		if w, ok := admin.(storekit.InstanceAwaiter); ok {
			wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			if unconfirmed, err := w.AwaitInstances(wctx); err != nil || len(unconfirmed) > 0 {
				t.Fatalf("AwaitInstances: %v, %v", unconfirmed, err)
			}
		}
	}
	brief := func(ms []certorder.CertificateMatch) string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%d/%d/%d/%s/%s/%s/%s/%v/%s/%s", m.OrderID, m.Seq, m.ID, m.SerialNumber, m.Thumbprint,
				m.Member, m.OrderStatus, m.Current, strings.Join(m.DNSNames, ","), m.ValidTill))
		}
		return strings.Join(out, " ")
	}
	// look asks twice through the cache (the second a hit), and the store
	// directly: the three alike. It returns the cached answer in brief.
	look := func(memberID int64, serial string) string {
		t.Helper()
		q := certorder.CertificateQuery{MemberID: memberID, Serials: []string{serial}}
		first, err := certs.FindCertificates(ctx, q)
		must(t, err)
		before := hits()
		second, err := certs.FindCertificates(ctx, q)
		must(t, err)
		if hits() != before+1 {
			t.Fatalf("%s of member %d: not answered from the cache right after a read", serial, memberID)
		}
		direct, err := server.FindCertificates(ctx, q)
		must(t, err)
		if brief(first) != brief(direct) || brief(second) != brief(direct) {
			t.Fatalf("%s of member %d: cached %q then %q, the store reads %q", serial, memberID, brief(first), brief(second), brief(direct))
		}
		if len(second) > 0 && second[0].Seq == 0 {
			t.Fatalf("cached match %+v", second[0])
		}
		return brief(second)
	}
	current := func(memberID int64, serial string) string {
		t.Helper()
		var out []string
		for _, f := range strings.Fields(look(memberID, serial)) {
			p := strings.Split(f, "/")
			out = append(out, p[0]+"/"+p[2]+"/"+p[6]+"/"+p[7])
		}
		return strings.Join(out, " ")
	}
	settle()
	for _, tc := range []struct {
		what   string
		member int64
		serial string
		want   string
	}{
		{"alice's", alice.ID, "a01", "1/501/issued/true"},
		{"bob's, for alice", alice.ID, "b01", ""},
		{"bob's", bob.ID, "b01", "2/601/issued/true"},
		{"nobody's", alice.ID, "c0c", ""},
	} {
		if got := current(tc.member, tc.serial); got != tc.want {
			t.Fatalf("%s: %q, want %q", tc.what, got, tc.want)
		}
	}

	// A reissue: a new history entry; the earlier certificate is no longer
	// current.
	_, err = admin.ImportOrders(ctx, "alice", Orders(t, doc(1, 502, "0A02", "issued")))
	must(t, err)
	settle()
	if got := current(alice.ID, "a01"); got != "1/501/issued/false" {
		t.Fatalf("after the reissue, the first certificate: %q", got)
	}
	if got := current(alice.ID, "a02"); got != "1/502/issued/true" {
		t.Fatalf("after the reissue, the new certificate: %q", got)
	}
	// A revocation: the order's status.
	_, err = admin.ImportOrders(ctx, "alice", Orders(t, doc(1, 502, "0A02", "revoked")))
	must(t, err)
	settle()
	if got := current(alice.ID, "a02"); got != "1/502/revoked/true" {
		t.Fatalf("after the revocation: %q", got)
	}
	// A certificate not found before, cached as missing, is found once
	// imported; bob's own import of alice's serial changes nothing of hers.
	_, err = admin.ImportOrders(ctx, "alice", Orders(t, doc(3, 701, "0C0C", "issued")))
	must(t, err)
	_, err = admin.ImportOrders(ctx, "bob", Orders(t, doc(4, 801, "0A01", "issued")))
	must(t, err)
	settle()
	if got := current(alice.ID, "c0c"); got != "3/701/issued/true" {
		t.Fatalf("a certificate imported after a look-up missed it: %q", got)
	}
	if got := current(alice.ID, "a01"); got != "1/501/revoked/false" {
		t.Fatalf("alice's serial, now on bob's order too: %q", got)
	}
	// The server's own change too.
	_, err = server.ImportOrders(ctx, "alice", Orders(t, doc(1, 503, "0A03", "issued")))
	must(t, err)
	settle()
	if got := current(alice.ID, "a03"); got != "1/503/issued/true" {
		t.Fatalf("the server's own reissue: %q", got)
	}
	// The operator's look-up across members is read each time.
	before := hits()
	for range 2 {
		ms, err := certs.FindCertificates(ctx, certorder.CertificateQuery{Serials: []string{"a01"}})
		must(t, err)
		if owners := slices.Sorted(func(yield func(string) bool) {
			for _, m := range ms {
				yield(m.Member)
			}
		}); strings.Join(owners, ",") != "alice,bob" {
			t.Fatalf("the operator's look-up: %q", brief(ms))
		}
	}
	if hits() != before {
		t.Fatal("the operator's look-up was answered from the cache")
	}
}
