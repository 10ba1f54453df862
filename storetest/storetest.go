// Package storetest is the one test suite every certorder.Store must pass.
// A backend's test calls Run with a function that opens a fresh, empty store.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/importfile"
)

// OrderJSON is an import document for order id; renewedBy 0 means not renewed.
func OrderJSON(id, renewedBy int64, validTill string) string {
	renewal := ""
	if renewedBy != 0 {
		renewal = fmt.Sprintf(`"is_renewed":true,"was_renewed_by_order_id":%d,`, renewedBy)
	}
	return fmt.Sprintf(`{"OrderId":%d,"certificate":{"id":%d,"common_name":"host%d.example.com",`+
		`"dns_names":["host%d.example.com"],"status":"issued","valid_from":"2025-01-01","valid_till":%q,`+
		`"user_id":"42","receipt_id":1234,"purchased_dns_names":"1","purchased_wildcard_names":0},`+
		`%s"status":"issued","product":{"name_id":"ssl_basic","name":"Basic","type":"ssl_certificate","csr_required":true},`+
		`"purchased_dns_names":1,"purchased_wildcard_names":null,"api_key":{"name":"k","key_type":"api"}}`,
		id, id*10, id, id, validTill, renewal)
}

// PendingJSON is an import document for an order not issued yet: a
// certificate without dates, serial or thumbprint, as CertCentral gives a
// pending order.
func PendingJSON(id int64, status string) string {
	return fmt.Sprintf(`{"OrderId":%d,"certificate":{"common_name":"host%d.example.com","dns_names":["host%d.example.com"],`+
		`"date_created":"2026-11-20T10:00:00+00:00","csr":"-----BEGIN CERTIFICATE REQUEST-----\nMIIC\n-----END CERTIFICATE REQUEST-----",`+
		`"signature_hash":"sha256","key_size":2048},"status":%q,"date_created":"2026-11-20T10:00:00+00:00","validity_years":1,`+
		`"product":{"name_id":"ssl_basic","name":"Basic","type":"ssl_certificate","csr_required":true}}`, id, id, id, status)
}

// Orders parses import documents into the sequence ImportOrders takes.
func Orders(t testing.TB, docs ...string) iter.Seq2[*certorder.Order, error] {
	t.Helper()
	return importfile.Decode(strings.NewReader("[" + strings.Join(docs, ",") + "]"))
}

// Run runs the suite. open must return a new, empty store; the suite closes it.
func Run(t *testing.T, open func(t *testing.T) certorder.Store) {
	newStore := func(t *testing.T) certorder.Store {
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("Members", func(t *testing.T) { testMembers(t, newStore(t)) })
	t.Run("Keys", func(t *testing.T) { testKeys(t, newStore(t)) })
	t.Run("ImportAndFind", func(t *testing.T) { testImportAndFind(t, newStore(t)) })
	t.Run("ListOrders", func(t *testing.T) { testListOrders(t, newStore(t)) })
	t.Run("RenewalChain", func(t *testing.T) { testRenewalChain(t, newStore(t)) })
	t.Run("PendingOrders", func(t *testing.T) { testPendingOrders(t, newStore(t), newStore(t)) })
	t.Run("Unavailable", func(t *testing.T) { testUnavailable(t, open) })
	t.Run("CredentialWithOrder", func(t *testing.T) { testCredentialWithOrder(t, newStore(t)) })
	t.Run("ImportIsAtomic", func(t *testing.T) { testImportAtomic(t, newStore(t)) })
	t.Run("ImportOwnership", func(t *testing.T) { testImportOwnership(t, newStore(t)) })
	t.Run("ImportBatches", func(t *testing.T) { testImportBatches(t, newStore(t)) })
	t.Run("ExportRestoreLarge", func(t *testing.T) { testExportRestoreLarge(t, newStore(t), newStore(t)) })
	t.Run("Renewals", func(t *testing.T) { testRenewals(t, newStore(t)) })
	t.Run("ExportRestore", func(t *testing.T) { testExportRestore(t, newStore(t), newStore(t)) })
	t.Run("RestoreRules", func(t *testing.T) { testRestoreRules(t, open) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, newStore(t)) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, newStore(t)) })
	t.Run("Webhooks", func(t *testing.T) { testWebhooks(t, open) })
	t.Run("ContainerLinks", func(t *testing.T) { testContainerLinks(t, newStore(t)) })
	t.Run("ApplyUpstream", func(t *testing.T) { testApplyUpstream(t, newStore(t)) })
	t.Run("SyncState", func(t *testing.T) { testSyncState(t, newStore(t)) })
	t.Run("SyncLock", func(t *testing.T) { testSyncLock(t, newStore(t)) })
	t.Run("MemberWebhooks", func(t *testing.T) { testMemberWebhooks(t, newStore(t)) })
	t.Run("Ping", func(t *testing.T) {
		if err := newStore(t).Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testMembers(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	for _, name := range []string{"bob", "alice"} {
		m, err := s.AddMember(ctx, name)
		must(t, err)
		if m.Name != name || m.ID == 0 || m.CreatedAt.IsZero() {
			t.Fatalf("AddMember = %+v", m)
		}
	}
	_, err := s.AddMember(ctx, "alice")
	wantErr(t, err, certorder.ErrConflict)
	_, err = s.AddMember(ctx, "no spaces")
	wantErr(t, err, certorder.ErrInvalid)
	wantErr(t, s.SetMemberDisabled(ctx, "nobody", true), certorder.ErrNotFound)
	must(t, s.SetMemberDisabled(ctx, "bob", true))

	ms, err := s.Members(ctx)
	must(t, err)
	var got []string
	for _, m := range ms {
		got = append(got, fmt.Sprintf("%s:%v", m.Name, m.Disabled))
	}
	if want := []string{"alice:false", "bob:true"}; !slices.Equal(got, want) {
		t.Fatalf("Members = %v, want %v", got, want)
	}
	must(t, s.SetMemberDisabled(ctx, "bob", false))
	ms, err = s.Members(ctx)
	must(t, err)
	if ms[1].Disabled {
		t.Fatal("bob still disabled after enabling")
	}

	// Self-service keys: on by default, switched per member.
	wantErr(t, s.SetSelfServiceKeys(ctx, "nobody", false), certorder.ErrNotFound)
	if ms[0].SelfServiceKeysOff || ms[1].SelfServiceKeysOff {
		t.Fatalf("self-service keys off by default: %+v", ms)
	}
	must(t, s.SetSelfServiceKeys(ctx, "bob", false))
	bob, err := s.FindMember(ctx, "bob")
	must(t, err)
	alice, err := s.FindMember(ctx, "alice")
	must(t, err)
	if !bob.SelfServiceKeysOff || alice.SelfServiceKeysOff {
		t.Fatalf("after turning bob's off: bob %+v, alice %+v", bob, alice)
	}
	must(t, s.SetSelfServiceKeys(ctx, "bob", true))
	ms, err = s.Members(ctx)
	must(t, err)
	if ms[1].SelfServiceKeysOff {
		t.Fatal("bob's self-service keys still off after turning them on")
	}
}

func testKeys(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	_, err := s.AddMember(ctx, "alice")
	must(t, err)
	text, k, err := certorder.NewKey("cron")
	must(t, err)
	wantErr(t, s.AddKey(ctx, "nobody", k), certorder.ErrNotFound)
	must(t, s.AddKey(ctx, "alice", k))
	wantErr(t, s.AddKey(ctx, "alice", k), certorder.ErrConflict)

	c, o, err := s.FindCredential(ctx, k.ID, 0)
	must(t, err)
	if !c.Verify("alice", text) || o != nil {
		t.Fatalf("fresh key does not verify: %+v", c)
	}
	if c.Verify("bob", text) || c.Verify("alice", text+"x") {
		t.Fatal("Verify accepts a wrong name or key")
	}
	_, _, err = s.FindCredential(ctx, "000000000000", 0)
	wantErr(t, err, certorder.ErrNotFound)
	_, err = s.Keys(ctx, "nobody")
	wantErr(t, err, certorder.ErrNotFound)

	must(t, s.SetMemberDisabled(ctx, "alice", true))
	c, _, err = s.FindCredential(ctx, k.ID, 0)
	must(t, err)
	if !c.MemberDisabled || c.Verify("alice", text) {
		t.Fatal("disabled member's key still verifies")
	}
	must(t, s.SetMemberDisabled(ctx, "alice", false))

	must(t, s.RevokeKey(ctx, k.ID))
	must(t, s.RevokeKey(ctx, k.ID)) // twice is fine
	wantErr(t, s.RevokeKey(ctx, "000000000000"), certorder.ErrNotFound)
	c, _, err = s.FindCredential(ctx, k.ID, 0)
	must(t, err)
	if !c.KeyRevoked || c.Verify("alice", text) {
		t.Fatal("revoked key still verifies")
	}
	// A member's revocation touches only its own keys.
	bob, err := s.AddMember(ctx, "bob")
	must(t, err)
	alice, err := s.FindMember(ctx, "alice")
	must(t, err)
	bobText, bk, err := certorder.NewKey("bob's")
	must(t, err)
	must(t, s.AddKey(ctx, "bob", bk))
	wantErr(t, s.RevokeMemberKey(ctx, alice.ID, bk.ID), certorder.ErrNotFound)
	wantErr(t, s.RevokeMemberKey(ctx, alice.ID, "000000000000"), certorder.ErrNotFound)
	c, _, err = s.FindCredential(ctx, bk.ID, 0)
	must(t, err)
	if !c.Verify("bob", bobText) {
		t.Fatal("alice's revocation reached bob's key")
	}
	must(t, s.RevokeMemberKey(ctx, bob.ID, bk.ID))
	must(t, s.RevokeMemberKey(ctx, bob.ID, bk.ID)) // twice is fine
	c, _, err = s.FindCredential(ctx, bk.ID, 0)
	must(t, err)
	if !c.KeyRevoked || c.Verify("bob", bobText) {
		t.Fatal("a key revoked by its member still verifies")
	}

	keys, err := s.Keys(ctx, "alice")
	must(t, err)
	if len(keys) != 1 || keys[0].ID != k.ID || keys[0].Label != "cron" || !keys[0].Revoked() ||
		!bytes.Equal(keys[0].Hash, k.Hash) || keys[0].CreatedAt.IsZero() {
		t.Fatalf("Keys = %+v", keys)
	}
}

func testImportAndFind(t *testing.T, s certorder.Store) {
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
	want, err := certorder.ParseOrder([]byte(OrderJSON(1, 2, "2024-05-06")))
	must(t, err)
	got, err := s.FindOrder(ctx, 1)
	must(t, err)
	if got.ID != 1 || got.Member != "alice" || got.MemberID == 0 || got.RenewedBy != 2 ||
		got.ValidTill != "2024-05-06" || got.CommonName != "host1.example.com" || got.Status != "issued" ||
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
	if got.ValidTill != "2031-02-03" {
		t.Fatalf("re-import kept valid_till %s", got.ValidTill)
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
func orderIDs(t *testing.T, s certorder.Store, q certorder.OrderQuery) []int64 {
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
func testListOrders(t *testing.T, s certorder.Store) {
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

func testRenewalChain(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	alice, err := s.AddMember(ctx, "alice")
	must(t, err)
	bob, err := s.AddMember(ctx, "bob")
	must(t, err)
	// 1 -> 3 -> 4 -> 5 (not stored); 2 -> 3 too (the lower number is followed back).
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 3, "2024-01-01"), OrderJSON(2, 3, "2024-02-01"),
		OrderJSON(3, 4, "2025-01-01"), OrderJSON(4, 5, "2026-01-01"), OrderJSON(6, 0, "2027-01-01")))
	must(t, err)
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(9, 0, "2030-01-01")))
	must(t, err)
	for _, tc := range []struct {
		id   int64
		want string
	}{
		{4, "1:issued2024-01-01>3 3:issued2025-01-01>4 4:issued2026-01-01>5 5:>0"},
		{1, "1:issued2024-01-01>3 3:issued2025-01-01>4 4:issued2026-01-01>5 5:>0"},
		{2, "2:issued2024-02-01>3 3:issued2025-01-01>4 4:issued2026-01-01>5 5:>0"},
		{6, "6:issued2027-01-01>0"},
	} {
		chain, err := s.RenewalChain(ctx, alice.ID, tc.id)
		must(t, err)
		var got []string
		for _, l := range chain {
			got = append(got, fmt.Sprintf("%d:%s%s>%d", l.ID, l.Status, l.ValidTill, l.RenewedBy))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("chain through %d = %s, want %s", tc.id, strings.Join(got, " "), tc.want)
		}
	}
	_, err = s.RenewalChain(ctx, bob.ID, 1)
	wantErr(t, err, certorder.ErrNotFound)
	_, err = s.RenewalChain(ctx, alice.ID, 9)
	wantErr(t, err, certorder.ErrNotFound)
}

// An order not issued yet is stored as CertCentral gives it, without
// certificate dates, through every door: import, find, list, the renewal
// chain, export and restore, and its issuance later.
func testPendingOrders(t *testing.T, s, dst certorder.Store) {
	ctx := context.Background()
	alice, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 2, "2026-12-01"), PendingJSON(2, "pending"),
		PendingJSON(3, "needs_approval"), PendingJSON(4, "canceled"), OrderJSON(5, 0, "2027-01-01")))
	must(t, err)
	o, err := s.FindOrder(ctx, 2)
	must(t, err)
	if o.Status != "pending" || o.ValidTill != "" || o.CommonName != "host2.example.com" ||
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
	if o, err := dst.FindOrder(ctx, 2); err != nil || o.ValidTill != "" || o.Status != "pending" {
		t.Errorf("restored pending order = %+v, %v", o, err)
	}

	// No order.expiring for an order without an end, whatever the window.
	_, err = s.AddEndpoint(ctx, "alice", certorder.Endpoint{URL: "https://a.example/hook", Secret: "whsec_a"})
	must(t, err)
	exp, err := s.ExpiringOrders(ctx, "0001-01-01", "9999-12-31")
	must(t, err)
	var expiring []int64
	for _, e := range exp {
		expiring = append(expiring, e.ID)
	}
	if !slices.Equal(expiring, []int64{5}) {
		t.Errorf("expiring orders: %v, want 5 alone (1 is renewed, the others have no valid_till)", expiring)
	}

	// Issued at last: the certificate's dates arrive with the new document.
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(2, 0, "2027-12-01")))
	must(t, err)
	if o, err := s.FindOrder(ctx, 2); err != nil || o.ValidTill != "2027-12-01" || o.Status != "issued" {
		t.Errorf("issued order 2 = %+v, %v", o, err)
	}
}

// A closed store and an expired deadline are ErrUnavailable (503), never
// an internal error.
func testUnavailable(t *testing.T, open func(t *testing.T) certorder.Store) {
	ctx := context.Background()
	s := open(t)
	_, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, k, err := certorder.NewKey("")
	must(t, err)
	must(t, s.AddKey(ctx, "alice", k))

	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	_, _, err = s.FindCredential(expired, k.ID, 1)
	wantErr(t, err, certorder.ErrUnavailable)
	_, err = s.ImportOrders(expired, "alice", Orders(t, OrderJSON(1, 0, "2030-01-01")))
	wantErr(t, err, certorder.ErrUnavailable)
	wantErr(t, s.Ping(expired), certorder.ErrUnavailable)

	must(t, s.Close())
	_, _, err = s.FindCredential(ctx, k.ID, 1)
	wantErr(t, err, certorder.ErrUnavailable)
	_, err = s.Members(ctx)
	wantErr(t, err, certorder.ErrUnavailable)
	wantErr(t, s.RevokeKey(ctx, k.ID), certorder.ErrUnavailable)
	wantErr(t, s.Ping(ctx), certorder.ErrUnavailable)
}

func testImportAtomic(t *testing.T, s certorder.Store) {
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

func testImportOwnership(t *testing.T, s certorder.Store) {
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

func testRenewals(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	_, err := s.ImportOrders(ctx, "alice", Orders(t,
		OrderJSON(1, 0, "2024-01-01"), OrderJSON(2, 0, "2025-01-01"), OrderJSON(3, 0, "2026-01-01"), OrderJSON(4, 0, "2027-01-01")))
	must(t, err)
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(9, 0, "2030-01-01")))
	must(t, err)

	must(t, s.RecordRenewal(ctx, 1, 2))
	must(t, s.RecordRenewal(ctx, 2, 3))
	must(t, s.RecordRenewal(ctx, 1, 2)) // the same again is fine

	for _, tc := range []struct {
		old, new int64
		want     error
	}{
		{3, 1, certorder.ErrConflict}, // 1 -> 2 -> 3 -> 1 would be a cycle
		{3, 2, certorder.ErrConflict}, // 2 -> 3 -> 2
		{1, 4, certorder.ErrConflict}, // 1 is already renewed by 2
		{3, 3, certorder.ErrInvalid},  // an order cannot renew itself
		{3, 9, certorder.ErrConflict}, // 9 is bob's
		{9, 4, certorder.ErrConflict}, // and the other way round
		{3, 99, certorder.ErrNotFound},
		{99, 3, certorder.ErrNotFound},
	} {
		wantErr(t, s.RecordRenewal(ctx, tc.old, tc.new), tc.want)
	}
	for id, want := range map[int64]int64{1: 2, 2: 3, 3: 0, 4: 0, 9: 0} {
		o, err := s.FindOrder(ctx, id)
		must(t, err)
		if o.RenewedBy != want {
			t.Errorf("order %d renewed by %d, want %d", id, o.RenewedBy, want)
		}
	}
	// Re-importing an order whose document says nothing of a renewal keeps
	// the one recorded; a document that names one records it.
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 0, "2024-01-01"), OrderJSON(3, 4, "2026-01-01")))
	must(t, err)
	for id, want := range map[int64]int64{1: 2, 3: 4} {
		o, err := s.FindOrder(ctx, id)
		must(t, err)
		if o.RenewedBy != want {
			t.Errorf("after re-import order %d renewed by %d, want %d", id, o.RenewedBy, want)
		}
	}
}

// Restore follows the renewal rules of RecordRenewal, and exports stream.
func testRestoreRules(t *testing.T, open func(t *testing.T) certorder.Store) {
	ctx := context.Background()
	head := `{"type":"member","name":"alice"}` + "\n" + `{"type":"member","name":"bob"}` + "\n"
	line := func(member string, id, renewedBy int64) string {
		return fmt.Sprintf(`{"type":"order","member":%q,"order_id":%d,"renewed_by":%d,"doc":%s}`+"\n",
			member, id, renewedBy, OrderJSON(id, 0, "2030-01-01"))
	}
	for _, tc := range []struct {
		name, export string
		want         error
	}{
		{"a cycle", head + line("alice", 1, 2) + line("alice", 2, 1), certorder.ErrConflict},
		{"across members", head + line("alice", 1, 2) + line("bob", 2, 0), certorder.ErrConflict},
		{"an order twice", head + line("alice", 1, 0) + line("alice", 1, 0), certorder.ErrInvalid},
	} {
		s := open(t)
		err := s.Restore(ctx, export.Read(strings.NewReader(tc.export)))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if ms, err := s.Members(ctx); err != nil || len(ms) != 0 {
			t.Errorf("%s: a refused restore left %v, %v", tc.name, ms, err)
		}
		s.Close()
	}

	// More orders than Export reads at a time: all exported, in order.
	src, dst := open(t), open(t)
	defer src.Close()
	defer dst.Close()
	_, err := src.AddMember(ctx, "alice")
	must(t, err)
	docs := make([]string, 2345)
	for i := range docs {
		docs[i] = OrderJSON(int64(i+1), 0, "2030-01-01")
	}
	_, err = src.ImportOrders(ctx, "alice", Orders(t, docs...))
	must(t, err)
	var out bytes.Buffer
	must(t, export.Write(ctx, src, &out))
	must(t, dst.Restore(ctx, export.Read(&out)))
	alice, err := dst.FindMember(ctx, "alice")
	must(t, err)
	if n, err := dst.CountOrders(ctx, certorder.OrderQuery{MemberID: alice.ID}); err != nil || n != len(docs) {
		t.Fatalf("restored %d orders, %v; want %d", n, err, len(docs))
	}
}

func testExportRestore(t *testing.T, src, dst certorder.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		_, err := src.AddMember(ctx, name)
		must(t, err)
	}
	must(t, src.SetMemberDisabled(ctx, "bob", true))
	must(t, src.SetSelfServiceKeys(ctx, "bob", false))
	for _, label := range []string{"cron", "old"} {
		_, k, err := certorder.NewKey(label)
		must(t, err)
		must(t, src.AddKey(ctx, "alice", k))
		if label == "old" {
			must(t, src.RevokeKey(ctx, k.ID))
		}
	}
	_, err := src.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 2, "2024-01-01"), OrderJSON(2, 0, "2025-01-01"), OrderJSON(3, 0, "2026-01-01")))
	must(t, err)
	must(t, src.RecordRenewal(ctx, 2, 3))
	_, err = src.ImportOrders(ctx, "bob", Orders(t, OrderJSON(9, 0, "2030-01-01")))
	must(t, err)
	must(t, src.LinkContainer(ctx, "bob", 12345))

	// Documents are exported byte for byte: no \u003c for <, no \u0026 for &.
	odd := strings.Replace(OrderJSON(4, 0, "2030-01-01"), `"status":"issued"`, `"status":"issued","note":"<b>&amp;</b>"`, 1)
	_, err = src.ImportOrders(ctx, "bob", Orders(t, odd))
	must(t, err)
	var first bytes.Buffer
	must(t, export.Write(ctx, src, &first))
	if !strings.Contains(first.String(), `"note":"<b>&amp;</b>"`) {
		t.Fatalf("the export rewrote the document:\n%s", first.String())
	}

	// A bad line anywhere restores nothing.
	broken := first.String() + `{"type":"order","member":"nobody","order_id":5,"doc":` + OrderJSON(5, 0, "2030-01-01") + "}\n"
	wantErr(t, dst.Restore(ctx, export.Read(strings.NewReader(broken))), certorder.ErrInvalid)
	if ms, err := dst.Members(ctx); err != nil || len(ms) != 0 {
		t.Fatalf("failed restore left %v, %v", ms, err)
	}

	must(t, dst.Restore(ctx, export.Read(bytes.NewReader(first.Bytes()))))
	var second bytes.Buffer
	must(t, export.Write(ctx, dst, &second))
	if first.String() != second.String() {
		t.Fatalf("export after restore differs:\n%s\n---\n%s", first.String(), second.String())
	}
	if strings.Count(first.String(), "\n") != 2+2+1+5 || !strings.Contains(first.String(), `"type":"link","member":"bob","container":12345`) {
		t.Fatalf("export has the wrong number of lines:\n%s", first.String())
	}
	wantErr(t, dst.Restore(ctx, export.Read(bytes.NewReader(first.Bytes()))), certorder.ErrConflict)
	o, err := dst.FindOrder(ctx, 2)
	must(t, err)
	if o.RenewedBy != 3 || o.Member != "alice" {
		t.Fatalf("restored order 2 = %+v", o)
	}
	bob, err := dst.FindMember(ctx, "bob")
	must(t, err)
	if !bob.SelfServiceKeysOff || !strings.Contains(first.String(), `"self_service_keys_off":true`) {
		t.Fatalf("restored bob = %+v", bob)
	}
	if links, err := dst.ContainerLinks(ctx); err != nil || len(links) != 1 || links[0].Member != "bob" || links[0].Container != 12345 {
		t.Fatalf("restored links = %+v, %v", links, err)
	}
}

// FindCredential reads the member's own order too, never another member's.
func testCredentialWithOrder(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	_, k, err := certorder.NewKey("")
	must(t, err)
	must(t, s.AddKey(ctx, "alice", k))
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 2, "2030-01-01")))
	must(t, err)
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(9, 0, "2030-01-01")))
	must(t, err)

	c, got, err := s.FindCredential(ctx, k.ID, 1)
	must(t, err)
	want, err := s.FindOrder(ctx, 1)
	must(t, err)
	if got == nil || got.ID != 1 || got.MemberID != c.MemberID || got.Member != "alice" || got.RenewedBy != 2 ||
		got.CommonName != want.CommonName || got.Status != want.Status || got.ValidTill != want.ValidTill ||
		got.CertEnd != want.CertEnd || !bytes.Equal(got.Doc, want.Doc) {
		t.Fatalf("FindCredential order = %+v\nwant %+v", got, want)
	}
	_, got, err = s.FindCredential(ctx, k.ID, 99)
	must(t, err)
	if got != nil {
		t.Fatalf("missing order read as %+v", got)
	}
	_, got, err = s.FindCredential(ctx, k.ID, 9)
	must(t, err)
	if got != nil {
		t.Fatalf("bob's order read for alice's key: %+v", got)
	}
	_, _, err = s.FindCredential(ctx, "000000000000", 1)
	wantErr(t, err, certorder.ErrNotFound)
}

func testAudit(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var entries []certorder.AuditEntry
	for i := range 6 {
		member := "alice"
		if i%2 == 1 {
			member = "bob"
		}
		entries = append(entries, certorder.AuditEntry{Time: base.Add(time.Duration(i) * time.Hour), Member: member,
			Action: "OrderInfo", OrderID: int64(100 + i), Outcome: i % 2 * 131, ClientIP: "192.0.2.7"})
	}
	// Caller-chosen texts are cut to their bounds.
	entries = append(entries, certorder.AuditEntry{Time: base.Add(-time.Hour), Member: strings.Repeat("m", 500),
		Action: strings.Repeat("a", 500), ClientIP: "2001:db8::1"})
	must(t, s.AppendAudit(ctx, entries[:3]))
	must(t, s.AppendAudit(ctx, entries[3:]))

	all, err := s.Audit(ctx, certorder.AuditQuery{})
	must(t, err)
	if len(all) != 7 || !all[0].Time.Equal(base.Add(5*time.Hour)) || all[0].Member != "bob" || all[0].OrderID != 105 ||
		all[0].Outcome != 131 || all[0].ClientIP != "192.0.2.7" || all[0].Action != "OrderInfo" {
		t.Fatalf("Audit = %+v", all)
	}
	if last := all[6]; len(last.Member) != 64 || len(last.Action) != 32 {
		t.Fatalf("long texts kept: %d, %d", len(last.Member), len(last.Action))
	}
	alice, err := s.Audit(ctx, certorder.AuditQuery{Member: "alice", Since: base.Add(time.Hour)})
	must(t, err)
	if len(alice) != 2 || alice[0].OrderID != 104 || alice[1].OrderID != 102 {
		t.Fatalf("alice since 13:00 = %+v", alice)
	}
	limited, err := s.Audit(ctx, certorder.AuditQuery{Limit: 2})
	must(t, err)
	if len(limited) != 2 {
		t.Fatalf("limit 2 gave %d", len(limited))
	}
	// Keys' last use is kept beside the entries; a flood is one row with a count.
	must(t, s.AppendAudit(ctx, []certorder.AuditEntry{
		{Time: base.Add(time.Minute), Member: "alice", KeyID: "0123456789ab", Action: "Auth"},
		{Time: base.Add(3 * time.Minute), Member: "alice", KeyID: "0123456789ab", Action: "Auth"},
		{Time: base.Add(2 * time.Minute), Member: "alice", KeyID: "ba9876543210", Action: "Auth"},
	}))
	must(t, s.AppendAudit(ctx, []certorder.AuditEntry{
		{Time: base.Add(2 * time.Minute), Member: "alice", KeyID: "0123456789ab", Action: "Auth"}, // older: kept as is
		{Time: base.Add(-2 * time.Hour), ClientIP: "198.51.100.9", Outcome: 140, Count: 5000},
	}))
	last, err := s.KeysLastUsed(ctx, []string{"0123456789ab", "ba9876543210", "000000000000"})
	must(t, err)
	if len(last) != 2 || !last["0123456789ab"].Equal(base.Add(3*time.Minute)) || !last["ba9876543210"].Equal(base.Add(2*time.Minute)) {
		t.Fatalf("KeysLastUsed = %v", last)
	}
	all, err = s.Audit(ctx, certorder.AuditQuery{})
	must(t, err)
	if flood := all[len(all)-1]; flood.Count != 5000 || flood.Outcome != 140 || flood.ClientIP != "198.51.100.9" {
		t.Fatalf("aggregated entry = %+v", flood)
	}
	if all[0].Count != 1 || all[len(all)-2].KeyID != "" {
		t.Fatalf("entries = %+v", all)
	}
	n, err := s.PruneAudit(ctx, base.Add(2*time.Hour))
	must(t, err)
	rest, err := s.Audit(ctx, certorder.AuditQuery{})
	must(t, err)
	if n != 8 || len(rest) != 4 {
		t.Fatalf("pruned %d, %d left", n, len(rest))
	}
}

func testSessions(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	m, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, k, err := certorder.NewKey("")
	must(t, err)
	must(t, s.AddKey(ctx, "alice", k))
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	mk := func(token string, expires time.Time) certorder.Session {
		return certorder.Session{TokenHash: certorder.HashKey(token), MemberID: m.ID, KeyID: k.ID, CSRF: "csrf-" + token,
			Created: now, Expires: expires}
	}
	must(t, s.AddSession(ctx, mk("a", now.Add(time.Hour))))
	must(t, s.AddSession(ctx, mk("b", now.Add(-time.Minute))))

	got, err := s.FindSession(ctx, certorder.HashKey("a"))
	must(t, err)
	if got.Member != "alice" || got.MemberID != m.ID || got.KeyID != k.ID || got.CSRF != "csrf-a" ||
		!got.Expires.Equal(now.Add(time.Hour)) || !got.Created.Equal(now) || !got.Valid(now) || got.Valid(now.Add(time.Hour)) {
		t.Fatalf("FindSession = %+v", got)
	}
	_, err = s.FindSession(ctx, certorder.HashKey("nope"))
	wantErr(t, err, certorder.ErrNotFound)
	must(t, s.SetSelfServiceKeys(ctx, "alice", false))
	if got, err = s.FindSession(ctx, certorder.HashKey("a")); err != nil || !got.SelfServiceKeysOff || !got.Valid(now) {
		t.Fatalf("FindSession after turning self-service keys off = %+v, %v", got, err)
	}
	// A session naming a key of another member is no session.
	_, err = s.AddMember(ctx, "bob")
	must(t, err)
	_, bk, err := certorder.NewKey("")
	must(t, err)
	must(t, s.AddKey(ctx, "bob", bk))
	crossed := mk("crossed", now.Add(time.Hour))
	crossed.KeyID = bk.ID
	if err := s.AddSession(ctx, crossed); err == nil {
		_, err = s.FindSession(ctx, certorder.HashKey("crossed"))
		wantErr(t, err, certorder.ErrNotFound)
	}

	// Disabling the member ends its sessions: enabling it again does not
	// bring them back.
	must(t, s.SetMemberDisabled(ctx, "alice", true))
	must(t, s.SetMemberDisabled(ctx, "alice", false))
	_, err = s.FindSession(ctx, certorder.HashKey("a"))
	wantErr(t, err, certorder.ErrNotFound)
	must(t, s.AddSession(ctx, mk("a", now.Add(time.Hour))))
	must(t, s.RevokeKey(ctx, k.ID))
	got, err = s.FindSession(ctx, certorder.HashKey("a"))
	must(t, err)
	if !got.KeyRevoked || got.Valid(now) {
		t.Fatal("a session of a revoked key is valid")
	}

	must(t, s.PruneSessions(ctx, now))
	_, err = s.FindSession(ctx, certorder.HashKey("b"))
	wantErr(t, err, certorder.ErrNotFound)
	must(t, s.DeleteSession(ctx, certorder.HashKey("a")))
	must(t, s.DeleteSession(ctx, certorder.HashKey("a")))
	_, err = s.FindSession(ctx, certorder.HashKey("a"))
	wantErr(t, err, certorder.ErrNotFound)
}

// LegacyAudit checks that entries of the audit table of one row per entry,
// written before segments, are still listed and pruned beside the new
// ones. insert writes such a row directly.
func LegacyAudit(t *testing.T, s certorder.Store, insert func(e certorder.AuditEntry) error) {
	ctx := context.Background()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	must(t, insert(certorder.AuditEntry{Time: base, Member: "alice", Action: "Auth", ClientIP: "192.0.2.1", Count: 1}))
	must(t, insert(certorder.AuditEntry{Time: base.Add(2 * time.Hour), Member: "bob", Action: "Auth", OrderID: 7, Count: 1}))
	must(t, s.AppendAudit(ctx, []certorder.AuditEntry{
		{Time: base.Add(time.Hour), Member: "alice", Action: "OrderInfo", OrderID: 1},
		{Time: base.Add(3 * time.Hour), Member: "bob", Action: "OrderInfo", OrderID: 2},
	}))
	all, err := s.Audit(ctx, certorder.AuditQuery{})
	must(t, err)
	var got []string
	for _, e := range all {
		got = append(got, fmt.Sprintf("%s:%d@%d", e.Member, e.OrderID, e.Time.Sub(base)/time.Hour))
	}
	if want := []string{"bob:2@3", "bob:7@2", "alice:1@1", "alice:0@0"}; !slices.Equal(got, want) {
		t.Fatalf("Audit = %v, want %v", got, want)
	}
	alice, err := s.Audit(ctx, certorder.AuditQuery{Member: "alice", Limit: 1})
	must(t, err)
	if len(alice) != 1 || alice[0].OrderID != 1 {
		t.Fatalf("alice, limit 1: %+v", alice)
	}
	n, err := s.PruneAudit(ctx, base.Add(150*time.Minute))
	must(t, err)
	rest, err := s.Audit(ctx, certorder.AuditQuery{})
	must(t, err)
	if n != 3 || len(rest) != 1 || rest[0].OrderID != 2 {
		t.Fatalf("pruned %d, left %+v", n, rest)
	}
}

// upstream makes an upstream order in the given division from OrderJSON,
// with the order status given.
func upstream(t *testing.T, id, renewedBy, container int64, status string) certorder.UpstreamOrder {
	t.Helper()
	doc := strings.Replace(OrderJSON(id, renewedBy, "2030-01-01"), `"status":"issued","product"`,
		`"status":"`+status+`","product"`, 1)
	o, err := certorder.ParseOrder([]byte(doc))
	must(t, err)
	return certorder.UpstreamOrder{Order: o, Container: container}
}

// owners says who owns each order: a member's name, "unassigned", or "-".
func owners(t *testing.T, s certorder.Store, ids ...int64) string {
	t.Helper()
	ctx := context.Background()
	known, err := s.KnownOrders(ctx, ids)
	must(t, err)
	var out []string
	for _, id := range ids {
		k, ok := known[id]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%d:-", id))
		case k.MemberID == 0:
			out = append(out, fmt.Sprintf("%d:unassigned@%d", id, k.Container))
		default:
			o, err := s.FindOrder(ctx, id)
			must(t, err)
			out = append(out, fmt.Sprintf("%d:%s>%d", id, o.Member, o.RenewedBy))
		}
	}
	return strings.Join(out, " ")
}

func changeList(res certorder.SyncResult) string {
	var out []string
	for _, c := range res.Changes {
		kind := "changed"
		switch {
		case c.Adopted:
			kind = "adopted"
		case c.Added:
			kind = "added"
		case c.StatusChanged():
			kind = c.PreviousStatus + "->" + c.Status
		}
		if c.RenewalLinked() {
			kind += fmt.Sprintf(",renewed>%d", c.RenewedBy)
		}
		out = append(out, fmt.Sprintf("%d:%s", c.OrderID, kind))
	}
	return strings.Join(out, " ")
}

func testContainerLinks(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	wantErr(t, s.LinkContainer(ctx, "nobody", 100), certorder.ErrNotFound)
	wantErr(t, s.LinkContainer(ctx, "alice", 0), certorder.ErrInvalid)
	must(t, s.LinkContainer(ctx, "bob", 300))
	must(t, s.LinkContainer(ctx, "alice", 200))
	must(t, s.LinkContainer(ctx, "alice", 100))
	must(t, s.LinkContainer(ctx, "alice", 100)) // again: nothing changes
	wantErr(t, s.LinkContainer(ctx, "bob", 100), certorder.ErrConflict)
	links, err := s.ContainerLinks(ctx)
	must(t, err)
	var got []string
	for _, l := range links {
		if l.CreatedAt.IsZero() || l.MemberID == 0 {
			t.Errorf("link %+v", l)
		}
		got = append(got, fmt.Sprintf("%s:%d", l.Member, l.Container))
	}
	if want := []string{"alice:100", "alice:200", "bob:300"}; !slices.Equal(got, want) {
		t.Fatalf("ContainerLinks = %v, want %v", got, want)
	}
	wantErr(t, s.UnlinkContainer(ctx, "bob", 100), certorder.ErrNotFound)
	wantErr(t, s.UnlinkContainer(ctx, "nobody", 100), certorder.ErrNotFound)
	must(t, s.UnlinkContainer(ctx, "alice", 100))
	must(t, s.LinkContainer(ctx, "bob", 100))
	links, err = s.ContainerLinks(ctx)
	must(t, err)
	if len(links) != 3 || links[1].Member != "bob" || links[1].Container != 100 {
		t.Fatalf("after unlink and link: %+v", links)
	}
}

// ApplyUpstream: who owns what, idempotence, conflicts, adoption, dry runs.
func testApplyUpstream(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob", "carol"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	must(t, s.LinkContainer(ctx, "alice", 100))
	must(t, s.LinkContainer(ctx, "bob", 200))
	apply := func(dry *certorder.SyncDryRun, orders ...certorder.UpstreamOrder) certorder.SyncResult {
		t.Helper()
		res, err := s.ApplyUpstream(ctx, orders, dry)
		must(t, err)
		return res
	}
	// In the batch's order, not in order of number: 2 renews 1 from bob's
	// division, 6 renews the unassigned 5 from alice's.
	res := apply(nil,
		upstream(t, 6, 0, 100, "issued"), upstream(t, 2, 0, 200, "issued"), upstream(t, 1, 2, 100, "issued"),
		upstream(t, 3, 0, 300, "issued"), upstream(t, 4, 0, 200, "issued"), upstream(t, 5, 6, 300, "issued"))
	if got, want := changeList(res), "1:added,renewed>2 2:added 4:added 6:added"; got != want {
		t.Errorf("changes %s, want %s", got, want)
	}
	if len(res.Unassigned) != 2 || res.Unassigned[0] != (certorder.UpstreamRef{ID: 3, Container: 300}) || len(res.Conflicts) != 0 {
		t.Errorf("unassigned %v, conflicts %v", res.Unassigned, res.Conflicts)
	}
	if got, want := owners(t, s, 1, 2, 3, 4, 5, 6, 7), "1:alice>2 2:alice>0 3:unassigned@300 4:bob>0 5:unassigned@300 6:alice>0 7:-"; got != want {
		t.Fatalf("owners %s, want %s", got, want)
	}
	// Unassigned orders are nobody's.
	for _, name := range []string{"alice", "bob", "carol"} {
		m, err := s.FindMember(ctx, name)
		must(t, err)
		for _, id := range orderIDs(t, s, certorder.OrderQuery{MemberID: m.ID}) {
			if id == 3 || id == 5 {
				t.Errorf("%s lists unassigned order %d", name, id)
			}
		}
	}
	_, err := s.FindOrder(ctx, 3)
	wantErr(t, err, certorder.ErrNotFound)

	// The same again changes nothing.
	res = apply(nil, upstream(t, 1, 2, 100, "issued"), upstream(t, 2, 0, 200, "issued"), upstream(t, 3, 0, 300, "issued"))
	if len(res.Changes) != 0 || res.Unchanged != 3 || len(res.Unassigned) != 1 {
		t.Fatalf("a second apply: %+v", res)
	}

	// A status change; an order imported by hand for bob in alice's division
	// stays bob's, reported; a renewal across members is not recorded, the
	// rest of the order is.
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(7, 0, "2030-01-01")))
	must(t, err)
	res = apply(nil, upstream(t, 4, 6, 200, "revoked"), upstream(t, 7, 0, 100, "issued"), upstream(t, 2, 0, 200, "issued"))
	if got, want := changeList(res), "4:issued->revoked"; got != want {
		t.Errorf("changes %s, want %s", got, want)
	}
	var conflicts []int64
	for _, c := range res.Conflicts {
		conflicts = append(conflicts, c.OrderID)
		if c.Reason == "" || c.MemberID == 0 {
			t.Errorf("conflict %+v", c)
		}
	}
	if !slices.Equal(conflicts, []int64{4, 7}) {
		t.Errorf("conflicts %+v, want orders 4 and 7", res.Conflicts)
	}
	if got, want := owners(t, s, 2, 4, 7), "2:alice>0 4:bob>0 7:bob>0"; got != want {
		t.Fatalf("owners %s, want %s", got, want)
	}
	if o, err := s.FindOrder(ctx, 4); err != nil || o.Status != "revoked" {
		t.Fatalf("order 4 = %+v, %v", o, err)
	}

	// Linking a division makes its unassigned orders adoptable; 5's renewal
	// 6 is alice's, so carol gets 5 without it.
	adoptable, err := s.UnassignedOrders(ctx, true, 0, 0)
	must(t, err)
	if len(adoptable) != 0 {
		t.Fatalf("adoptable before the link: %d", len(adoptable))
	}
	must(t, s.LinkContainer(ctx, "carol", 300))
	adoptable, err = s.UnassignedOrders(ctx, true, 0, 0)
	must(t, err)
	if len(adoptable) != 2 || adoptable[0].Order.ID != 3 || adoptable[1].Order.RenewedBy != 6 || adoptable[1].Container != 300 {
		t.Fatalf("adoptable = %+v", adoptable)
	}
	page, err := s.UnassignedOrders(ctx, false, 3, 1)
	must(t, err)
	if len(page) != 1 || page[0].Order.ID != 5 {
		t.Fatalf("a page of unassigned orders: %+v", page)
	}
	res = apply(nil, adoptable...)
	if got, want := changeList(res), "3:adopted 5:adopted"; got != want || len(res.Conflicts) != 1 || res.Conflicts[0].OrderID != 5 {
		t.Errorf("adoption: changes %s, want %s; conflicts %+v", got, want, res.Conflicts)
	}
	if got, want := owners(t, s, 3, 5, 6), "3:carol>0 5:carol>0 6:alice>0"; got != want {
		t.Fatalf("owners %s, want %s", got, want)
	}
	if refs, err := s.UnassignedRefs(ctx); err != nil || len(refs) != 0 {
		t.Fatalf("unassigned after adoption: %v %v", refs, err)
	}

	// A dry run writes nothing, and its later batches see its earlier ones:
	// 11 renews 10, so it is alice's though its division is nobody's.
	before := owners(t, s, 10, 11)
	dry := certorder.NewSyncDryRun()
	first := apply(dry, upstream(t, 10, 11, 100, "issued"))
	second := apply(dry, upstream(t, 11, 0, 900, "issued"))
	if changeList(first) != "10:added,renewed>11" || changeList(second) != "11:added" || second.Changes[0].MemberID != first.Changes[0].MemberID {
		t.Fatalf("dry run: %+v then %+v", first, second)
	}
	if after := owners(t, s, 10, 11); after != before || before != "10:- 11:-" {
		t.Fatalf("a dry run wrote: %s", after)
	}

	// A bad batch writes nothing.
	_, err = s.ApplyUpstream(ctx, []certorder.UpstreamOrder{upstream(t, 20, 0, 100, "issued"),
		upstream(t, 21, 0, 100, "issued"), upstream(t, 21, 0, 100, "issued")}, nil)
	wantErr(t, err, certorder.ErrInvalid)
	if got := owners(t, s, 20, 21); got != "20:- 21:-" {
		t.Fatalf("a refused batch left %s", got)
	}
}

func testSyncState(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	st, err := s.SyncState(ctx, 10)
	must(t, err)
	if !st.Cursor.IsZero() || len(st.Runs) != 0 {
		t.Fatalf("a new store's sync state: %+v", st)
	}
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ok := certorder.SyncRun{Started: base, Finished: base.Add(time.Minute), Instance: "host:1", OK: true, Cursor: base,
		Summary: certorder.SyncSummary{Full: true, Listed: 10, Fetched: 9, New: 8, Requests: 11, LimiterWait: time.Second,
			ByStatus: map[string]int{"issued": 7, "pending": 2}}}
	must(t, s.RecordSyncRun(ctx, ok))
	failed := certorder.SyncRun{Started: base.Add(time.Hour), Finished: base.Add(time.Hour + time.Second), Instance: "host:2",
		Error: "digicert: list orders: HTTP 503", Cursor: base.Add(time.Hour), Summary: certorder.SyncSummary{Listed: 1}}
	must(t, s.RecordSyncRun(ctx, failed))
	st, err = s.SyncState(ctx, 10)
	must(t, err)
	if !st.Cursor.Equal(base) || len(st.Runs) != 2 {
		t.Fatalf("sync state: %+v", st)
	}
	if r := st.Runs[0]; r.OK || r.Error != failed.Error || r.Instance != "host:2" || !r.Started.Equal(failed.Started) {
		t.Errorf("the newest run = %+v", r)
	}
	if r := st.Runs[1]; !r.OK || !reflect.DeepEqual(r.Summary, ok.Summary) || !r.Finished.Equal(ok.Finished) || !r.Cursor.Equal(base) || r.ID == 0 {
		t.Errorf("the first run = %+v", r)
	}
	for i := range certorder.MaxSyncRuns {
		run := ok
		run.Cursor = base.Add(time.Duration(i+2) * time.Hour)
		must(t, s.RecordSyncRun(ctx, run))
	}
	st, err = s.SyncState(ctx, 1000)
	must(t, err)
	if len(st.Runs) != certorder.MaxSyncRuns || !st.Cursor.Equal(base.Add(time.Duration(certorder.MaxSyncRuns+1)*time.Hour)) {
		t.Fatalf("%d runs kept, cursor %v", len(st.Runs), st.Cursor)
	}
}

func testSyncLock(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	lock, ok, err := s.LockSync(ctx)
	must(t, err)
	if !ok {
		t.Fatal("a free lock was not taken")
	}
	must(t, lock.Check(ctx))
	if other, ok, err := s.LockSync(ctx); err != nil || ok {
		if other != nil {
			other.Release()
		}
		t.Fatalf("the lock was taken twice: %v", err)
	}
	lock.Release()
	lock, ok, err = s.LockSync(ctx)
	must(t, err)
	if !ok {
		t.Fatal("a released lock was not taken again")
	}
	lock.Release()
}

// An import larger than a batch (certorder.ImportBatchSize) keeps every
// rule across the batches' boundaries, and stays all or nothing.
func testImportBatches(t *testing.T, s certorder.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	const n = 2*certorder.ImportBatchSize + 500
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
	o, err := s.FindOrder(ctx, certorder.ImportBatchSize)
	must(t, err)
	if o.RenewedBy != certorder.ImportBatchSize+1 {
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

// An export of more orders than a restore writes at once comes back whole.
func testExportRestoreLarge(t *testing.T, src, dst certorder.Store) {
	ctx := context.Background()
	_, err := src.AddMember(ctx, "alice")
	must(t, err)
	var docs []string
	for id := int64(1); id <= 1234; id++ {
		renewedBy := int64(0)
		if id%2 == 1 {
			renewedBy = id + 1
		}
		docs = append(docs, OrderJSON(id, renewedBy, "2030-01-01"))
	}
	_, err = src.ImportOrders(ctx, "alice", Orders(t, docs...))
	must(t, err)
	var first, second bytes.Buffer
	must(t, export.Write(ctx, src, &first))
	must(t, dst.Restore(ctx, export.Read(bytes.NewReader(first.Bytes()))))
	must(t, export.Write(ctx, dst, &second))
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatalf("the restored store exports differently (%d and %d bytes)", first.Len(), second.Len())
	}
	if o, err := dst.FindOrder(ctx, 1233); err != nil || o.RenewedBy != 1234 {
		t.Fatalf("order 1233 restored as %+v, %v", o, err)
	}
}
