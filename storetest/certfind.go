package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// FindCertificates finds a certificate by serial number or thumbprint
// through the orders' histories: an earlier certificate of a reissued order
// too, not current once a later one is issued (a reissue pending does not
// count); with a member, never another member's; many keys in one call.
func testFindCertificates(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	alice, err := s.AddMember(ctx, "alice")
	must(t, err)
	bob, err := s.AddMember(ctx, "bob")
	must(t, err)
	for _, doc := range []string{
		CertJSON(1, 501, "0A01", "2026-03-01", "2026-09-16", "2029-03-01"),
		CertJSON(1, 502, "0A02", "2026-09-01", "2027-03-19", "2029-03-01"), // a reissue
		CertJSON(1, 503, "", "", "", "2029-03-01"),                         // another, pending
	} {
		_, err = s.ImportOrders(ctx, "alice", Orders(t, doc))
		must(t, err)
	}
	_, err = s.ImportOrders(ctx, "bob", Orders(t, CertJSON(2, 601, "0B04", "2026-03-01", "2026-09-16", "2029-03-01")))
	must(t, err)

	find := func(memberID int64, serials, thumbprints []string) string {
		t.Helper()
		ms, err := s.FindCertificates(ctx, certorder.CertificateQuery{MemberID: memberID, Serials: serials, Thumbprints: thumbprints})
		must(t, err)
		var out []string
		for _, m := range ms {
			if m.Seq == 0 || m.MemberID == 0 || m.CommonName == "" || len(m.DNSNames) != 2 {
				t.Errorf("match %+v", m)
			}
			out = append(out, fmt.Sprintf("%d/%d/%s/%s/%s/%v", m.OrderID, m.ID, m.SerialNumber, m.Member, m.OrderStatus, m.Current))
		}
		return strings.Join(out, " ")
	}
	thumb := func(serial string) string { return strings.Repeat(strings.ToLower(serial[len(serial)-2:]), 20) }
	for _, tc := range []struct {
		what                 string
		member               int64
		serials, thumbprints []string
		want                 string
	}{
		{"the current certificate", alice.ID, []string{"a02"}, nil, "1/502/0A02/alice/reissue_pending/true"},
		{"an earlier one", alice.ID, []string{"a01"}, nil, "1/501/0A01/alice/reissue_pending/false"},
		{"by thumbprint", alice.ID, nil, []string{thumb("0A01")}, "1/501/0A01/alice/reissue_pending/false"},
		{"another member's", alice.ID, []string{"b04"}, []string{thumb("0B04")}, ""},
		{"unknown", alice.ID, []string{"c05"}, []string{thumb("0C05")}, ""},
		{"nothing asked", alice.ID, nil, nil, ""},
		{"every member's, in one call", 0, []string{"a01", "b04", "c05"}, []string{thumb("0A02")},
			"1/501/0A01/alice/reissue_pending/false 1/502/0A02/alice/reissue_pending/true 2/601/0B04/bob/issued/true"},
		{"bob's own", bob.ID, []string{"b04"}, nil, "2/601/0B04/bob/issued/true"},
		{"found twice, told once", 0, []string{"a01"}, []string{thumb("0A01")}, "1/501/0A01/alice/reissue_pending/false"},
	} {
		if got := find(tc.member, tc.serials, tc.thumbprints); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.what, got, tc.want)
		}
	}

	// The orders list's search takes an order number, a serial or a
	// thumbprint of any certificate the order has had, or part of a name;
	// an order it names is listed even when renewed ones are hidden.
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(3, 4, "2026-01-01"), OrderJSON(4, 0, "2027-01-01")))
	must(t, err)
	for _, tc := range []struct {
		search string
		want   string
	}{
		{"0A:01", "[1]"}, {"a01", "[1]"}, {"0a02", "[1]"}, {thumb("0A01"), "[1]"}, {strings.ToUpper(thumb("0A02")), "[1]"},
		{"1", "[1]"}, {" 3 ", "[3]"}, {"host3", "[]"}, {"HOST4", "[4]"}, {"b04", "[]"}, {thumb("0B04"), "[]"}, {"2", "[]"},
	} {
		q := certorder.OrderQuery{MemberID: alice.ID, Search: tc.search, HideRenewed: true}
		os, err := s.ListOrders(ctx, q)
		must(t, err)
		n, err := s.CountOrders(ctx, q)
		must(t, err)
		var ids []int64
		for _, o := range os {
			ids = append(ids, o.ID)
		}
		if got := fmt.Sprint(ids); strings.Trim(got, "[]") != strings.Trim(tc.want, "[]") || n != len(ids) {
			t.Errorf("search %q: %v (count %d), want %s", tc.search, got, n, tc.want)
		}
	}

	// The pending reissue issued: the certificate before it is no longer current.
	_, err = s.ImportOrders(ctx, "alice", Orders(t, CertJSON(1, 503, "0A03", "2027-03-01", "2027-09-16", "2029-03-01")))
	must(t, err)
	if got, want := find(alice.ID, []string{"a02", "a03"}, nil), "1/502/0A02/alice/issued/false 1/503/0A03/alice/issued/true"; got != want {
		t.Errorf("after the reissue: got %q, want %q", got, want)
	}
}
