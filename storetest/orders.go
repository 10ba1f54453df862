package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/orderdoc"
	"github.com/certorder/certorder/internal/storekit"
)

func testImportAndFind(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	_, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, err = s.ImportOrders(ctx, "nobody", Orders(t, OrderJSON(1, 0, "2030-01-01")))
	wantErr(t, err, certorder.ErrNotFound)

	n, err := s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(3, 0, "2030-01-01"), OrderJSON(1, 2, "2024-05-06")))
	must(t, err)
	if n != 2 {
		t.Fatalf("imported %d, want 2", n)
	}
	want, err := orderdoc.Parse([]byte(OrderJSON(1, 2, "2024-05-06")))
	must(t, err)
	got, err := s.FindOrder(ctx, 1)
	must(t, err)
	if got.ID != 1 || got.Member != "alice" || got.MemberID == 0 || got.RenewedBy != 2 ||
		got.Certificate.ValidTill != "2024-05-06" || got.Certificate.CommonName != "host1.example.com" || got.Status != "issued" ||
		got.CertEnd != want.CertEnd || !bytes.Equal(got.Doc, want.Doc) {
		t.Fatalf("FindOrder = %+v\nwant doc %s", got, want.Doc)
	}
	_, err = s.FindOrder(ctx, 99)
	wantErr(t, err, certorder.ErrNotFound)

	// Importing again replaces the document.
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(3, 0, "2031-02-03")))
	must(t, err)
	got, err = s.FindOrder(ctx, 3)
	must(t, err)
	if got.Certificate.ValidTill != "2031-02-03" {
		t.Fatalf("re-import kept valid_till %s", got.Certificate.ValidTill)
	}
	alice, err := s.FindMember(ctx, "alice")
	must(t, err)
	list, err := s.ListOrders(ctx, certorder.OrderQuery{MemberID: alice.ID})
	must(t, err)
	if len(list) != 2 || list[0].ID != 1 || list[1].ID != 3 || !bytes.Equal(list[0].Doc, want.Doc) {
		t.Fatalf("ListOrders = %+v", list)
	}
	_, err = s.FindMember(ctx, "nobody")
	wantErr(t, err, certorder.ErrNotFound)
}

// orderIDs lists the orders q selects, by number.
func orderIDs(t *testing.T, s storekit.Store, q certorder.OrderQuery) []int64 {
	t.Helper()
	list, err := s.ListOrders(context.Background(), q)
	must(t, err)
	ids := []int64{}
	for _, o := range list {
		ids = append(ids, o.ID)
	}
	return ids
}

// Paging, search and sorting happen in the store.
func testListOrders(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	alice, err := s.AddMember(ctx, "alice")
	must(t, err)
	bob, err := s.AddMember(ctx, "bob")
	must(t, err)
	// host<N>.example.com, valid till in reverse order of the number.
	var docs []string
	for id := int64(1); id <= 30; id++ {
		docs = append(docs, OrderJSON(id, 0, fmt.Sprintf("2030-01-%02d", 31-id)))
	}
	_, err = s.ImportOrders(ctx, "alice", Orders(t, docs...))
	must(t, err)
	must(t, s.RecordRenewal(ctx, 1, 2))
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(99, 0, "2030-01-01")))
	must(t, err)

	for _, tc := range []struct {
		name  string
		q     certorder.OrderQuery
		want  []int64
		count int
	}{
		{name: "first page", q: certorder.OrderQuery{MemberID: alice.ID, Limit: 3}, want: []int64{1, 2, 3}, count: 30},
		{name: "third page", q: certorder.OrderQuery{MemberID: alice.ID, Limit: 3, Offset: 6}, want: []int64{7, 8, 9}, count: 30},
		{name: "after an ID", q: certorder.OrderQuery{MemberID: alice.ID, AfterID: 28}, want: []int64{29, 30}, count: 2},
		{name: "by expiry", q: certorder.OrderQuery{MemberID: alice.ID, Sort: certorder.SortByExpiry, Limit: 2}, want: []int64{30, 29}, count: 30},
		{name: "by expiry, latest first", q: certorder.OrderQuery{MemberID: alice.ID, Sort: certorder.SortByExpiryDesc, Limit: 2}, want: []int64{1, 2}, count: 30},
		{name: "search any case", q: certorder.OrderQuery{MemberID: alice.ID, Search: "HOST2"}, want: []int64{2, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29}, count: 11},
		{name: "search misses", q: certorder.OrderQuery{MemberID: alice.ID, Search: "nothing"}, want: []int64{}, count: 0},
		{name: "hide renewed", q: certorder.OrderQuery{MemberID: alice.ID, HideRenewed: true, Limit: 2}, want: []int64{2, 3}, count: 29},
		{name: "another member's", q: certorder.OrderQuery{MemberID: bob.ID}, want: []int64{99}, count: 1},
		{name: "a search never crosses members", q: certorder.OrderQuery{MemberID: bob.ID, Search: "host1"}, want: []int64{}, count: 0},
	} {
		if got := orderIDs(t, s, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		n, err := s.CountOrders(ctx, tc.q)
		must(t, err)
		if n != tc.count {
			t.Errorf("%s: count %d, want %d", tc.name, n, tc.count)
		}
	}
	// Each order says which order it renewed: the lowest-numbered one.
	must(t, s.RecordRenewal(ctx, 4, 2))
	list, err := s.ListOrders(ctx, certorder.OrderQuery{MemberID: alice.ID, Limit: 5})
	must(t, err)
	var renews []string
	for _, o := range list {
		renews = append(renews, fmt.Sprintf("%d<%d", o.ID, o.Renews))
	}
	if got, want := strings.Join(renews, " "), "1<0 2<1 3<0 4<0 5<0"; got != want {
		t.Errorf("Renews = %s, want %s", got, want)
	}
}

// An order not issued yet is stored as CertCentral gives it, without
// certificate dates, through every door: import, find, list, the renewal
// chain, export and restore, and its issuance later.
func testPendingOrders(t *testing.T, s, dst storekit.Store) {
	ctx := context.Background()
	alice, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 2, "2026-12-01"), PendingJSON(2, "pending"),
		PendingJSON(3, "needs_approval"), PendingJSON(4, "canceled"), OrderJSON(5, 0, "2027-01-01")))
	must(t, err)
	o, err := s.FindOrder(ctx, 2)
	must(t, err)
	if o.Status != "pending" || o.Certificate.ValidTill != "" || o.Certificate.CommonName != "host2.example.com" ||
		bytes.Contains(o.Doc, []byte("valid_")) || !bytes.Contains(o.Doc, []byte(`"csr":"-----BEGIN`)) {
		t.Fatalf("pending order 2 = %+v, doc %s", o, o.Doc)
	}
	chain, err := s.RenewalChain(ctx, alice.ID, 1)
	must(t, err)
	if len(chain) != 2 || chain[1] != (certorder.ChainLink{ID: 2, Status: "pending"}) {
		t.Errorf("chain through 1 = %+v", chain)
	}
	// Orders without an expiry sort before every date.
	if got := orderIDs(t, s, certorder.OrderQuery{MemberID: alice.ID, Sort: certorder.SortByExpiry}); !slices.Equal(got, []int64{2, 3, 4, 1, 5}) {
		t.Errorf("by expiry: %v", got)
	}

	// An issued order without valid_till is refused, naming the order and
	// the field; nothing of the import is stored.
	noTill := strings.Replace(OrderJSON(7, 0, "2027-01-01"), `"valid_till":"2027-01-01",`, "", 1)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, PendingJSON(6, "pending"), noTill))
	if err == nil || !strings.Contains(err.Error(), "7") || !strings.Contains(err.Error(), "certificate.valid_till") {
		t.Errorf("an issued order without valid_till: %v", err)
	}
	if _, err := s.FindOrder(ctx, 6); !errors.Is(err, certorder.ErrNotFound) {
		t.Errorf("order 6 of a refused import: %v", err)
	}

	var first, second bytes.Buffer
	must(t, export.Write(ctx, s, &first))
	must(t, dst.Restore(ctx, export.Read(bytes.NewReader(first.Bytes()))))
	must(t, export.Write(ctx, dst, &second))
	if first.String() != second.String() || !strings.Contains(first.String(), `"status":"needs_approval"`) {
		t.Fatalf("export after restore differs:\n%s\n---\n%s", first.String(), second.String())
	}
	if o, err := dst.FindOrder(ctx, 2); err != nil || o.Certificate.ValidTill != "" || o.Status != "pending" {
		t.Errorf("restored pending order = %+v, %v", o, err)
	}

	// No order.expiring for an order without an end, whatever the window.
	_, err = s.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://a.example/hook", Secret: "whsec_a"})
	must(t, err)
	exp, err := s.EndingOrders(ctx, certorder.EventOrderExpiring, "0001-01-01", "9999-12-31")
	must(t, err)
	var expiring []int64
	for _, e := range exp {
		expiring = append(expiring, e.ID)
	}
	if !slices.Equal(expiring, []int64{1, 5}) {
		t.Errorf("ending orders: %v, want 1 and 5 (renewed or not: the worker decides; the others have no valid_till)", expiring)
	}

	// Issued at last: the certificate's dates arrive with the new document.
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(2, 0, "2027-12-01")))
	must(t, err)
	if o, err := s.FindOrder(ctx, 2); err != nil || o.Certificate.ValidTill != "2027-12-01" || o.Status != "issued" {
		t.Errorf("issued order 2 = %+v, %v", o, err)
	}
}

func testImportAtomic(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	_, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 0, "2030-01-01")))
	must(t, err)
	before, err := s.FindOrder(ctx, 1)
	must(t, err)

	// The third order is malformed: the first two must not land either.
	bad := `{"OrderId":7,"certificate":{"valid_till":"soon"}}`
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 0, "2039-09-09"), OrderJSON(2, 0, "2030-01-01"), bad))
	wantErr(t, err, certorder.ErrInvalid)
	// A cycle in the file is refused the same way.
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(5, 6, "2030-01-01"), OrderJSON(6, 5, "2030-01-01")))
	wantErr(t, err, certorder.ErrConflict)

	alice, err := s.FindMember(ctx, "alice")
	must(t, err)
	n, err := s.CountOrders(ctx, certorder.OrderQuery{MemberID: alice.ID})
	must(t, err)
	after, err := s.FindOrder(ctx, 1)
	must(t, err)
	if n != 1 || !bytes.Equal(before.Doc, after.Doc) {
		t.Fatalf("failed imports changed the store: %d orders, doc %s", n, after.Doc)
	}
}

func testImportOwnership(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	_, err := s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 0, "2030-01-01"), OrderJSON(2, 0, "2030-01-01")))
	must(t, err)
	// bob cannot take over alice's order, nor name it as his renewal, nor
	// have his order named as the renewal of one of hers.
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(1, 0, "2030-01-01")))
	wantErr(t, err, certorder.ErrConflict)
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(10, 1, "2030-01-01")))
	wantErr(t, err, certorder.ErrConflict)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(3, 20, "2030-01-01")))
	must(t, err) // 20 is not stored yet: the CA's word is taken
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(20, 0, "2030-01-01")))
	wantErr(t, err, certorder.ErrConflict)
	o, err := s.FindOrder(ctx, 1)
	must(t, err)
	if o.Member != "alice" {
		t.Fatalf("order 1 belongs to %s", o.Member)
	}
}

// An import larger than a batch (storekit.ImportBatchSize) keeps every
// rule across the batches' boundaries, and stays all or nothing.
func testImportBatches(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	const n = 2*storekit.ImportBatchSize + 500
	docs := func(renewal func(id int64) int64, extra ...string) []string {
		var ds []string
		for id := int64(1); id <= n; id++ {
			ds = append(ds, OrderJSON(id, renewal(id), "2030-01-01"))
		}
		return append(ds, extra...)
	}
	count := func() int {
		m, err := s.FindMember(ctx, "alice")
		must(t, err)
		c, err := s.CountOrders(ctx, certorder.OrderQuery{MemberID: m.ID})
		must(t, err)
		return c
	}
	// A cycle closed by an order of the third batch: 500 -> 2200 -> 500.
	cycle := func(id int64) int64 {
		switch id {
		case 500:
			return 2200
		case 2200:
			return 500
		}
		return 0
	}
	_, err := s.ImportOrders(ctx, "alice", Orders(t, docs(cycle)...))
	wantErr(t, err, certorder.ErrConflict)
	// Renewal chains of ten across every boundary: 996 -> ... -> 1005.
	chain := func(id int64) int64 {
		if id < n && id%10 != 5 {
			return id + 1
		}
		return 0
	}
	got, err := s.ImportOrders(ctx, "alice", Orders(t, docs(chain)...))
	must(t, err)
	if got != n || count() != n {
		t.Fatalf("imported %d, stored %d, want %d", got, count(), n)
	}
	o, err := s.FindOrder(ctx, storekit.ImportBatchSize)
	must(t, err)
	if o.RenewedBy != storekit.ImportBatchSize+1 {
		t.Fatalf("order %d renewed by %d", o.ID, o.RenewedBy)
	}
	// Re-imported without renewals, the orders keep them (an import adds
	// renewal relations, never drops one); order 1005 may not renew order
	// 996, a batch back: a cycle through what the import wrote before.
	none := func(int64) int64 { return 0 }
	_, err = s.ImportOrders(ctx, "alice", Orders(t, docs(func(id int64) int64 {
		if id == 1005 {
			return 996
		}
		return 0
	})...))
	wantErr(t, err, certorder.ErrConflict)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, docs(none)...))
	must(t, err)
	if o, err := s.FindOrder(ctx, 1); err != nil || o.RenewedBy != 2 {
		t.Fatalf("order 1 after a re-import: %+v %v", o, err)
	}
	// Bob's import fails in its third batch (alice's order 2400): nothing of it is stored.
	var bobs []string
	for id := int64(10001); id < 10001+n-1; id++ {
		bobs = append(bobs, OrderJSON(id, 0, "2030-01-01"))
	}
	_, err = s.ImportOrders(ctx, "bob", Orders(t, append(bobs, OrderJSON(2400, 0, "2030-01-01"))...))
	wantErr(t, err, certorder.ErrConflict)
	if _, err := s.FindOrder(ctx, 10001); !errors.Is(err, certorder.ErrNotFound) {
		t.Fatalf("bob's first order stored by a failed import: %v", err)
	}
	if count() != n {
		t.Fatalf("alice has %d orders", count())
	}
}

// DocumentFormats checks that a store writes an order's document in the
// format it says (compressed: storekit.PackDoc; or plain) and reads it as
// imported, and that a row of the other format reads the same beside it:
// a plain one as a release before wrote it, a compressed one as a store
// that compresses writes it. open opens the store (again: nothing
// cached); stored reads an order's doc_format and the length of its
// stored document; set stores an order's document as it is, in format.
func DocumentFormats(t *testing.T, compressed bool, open func() storekit.Store, stored func(id int64) (format, length int64), set func(id int64, doc []byte, format int64)) {
	ctx := context.Background()
	s := open()
	_, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 0, "2030-01-01"), OrderJSON(2, 0, "2030-01-01")))
	must(t, err)
	want, err := s.FindOrder(ctx, 1)
	must(t, err)
	s.Close()
	wantFormat, plain := int64(certorder.DocFormat), int64(len(want.Doc))
	if compressed {
		wantFormat = certorder.DocFormat | storekit.Compressed
	}
	if format, length := stored(1); format != wantFormat || (length == plain) == compressed {
		t.Fatalf("stored in format %d, %d bytes for a document of %d", format, length, plain)
	}
	other := bytes.Replace(want.Doc, []byte(`"OrderId":1`), []byte(`"OrderId":2`), 1)
	if compressed {
		set(2, other, certorder.DocFormat)
	} else {
		packed, format := storekit.PackDoc(other)
		set(2, packed, format)
	}
	s = open()
	defer s.Close()
	for _, id := range []int64{1, 2} {
		got, err := s.FindOrder(ctx, id)
		if err != nil || got.CertEnd != want.CertEnd || len(got.Doc) != len(want.Doc) ||
			!bytes.Contains(got.Doc, []byte(fmt.Sprintf(`"OrderId":%d`, id))) {
			t.Fatalf("order %d: %+v, %v", id, got, err)
		}
	}
}
