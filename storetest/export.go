package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/storekit"
)

// Restore follows the renewal rules of RecordRenewal, and exports stream.
func testRestoreRules(t *testing.T, open func(t *testing.T) storekit.Store) {
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

func testExportRestore(t *testing.T, src, dst storekit.Store) {
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

// An export of more orders than a restore writes at once comes back whole.
func testExportRestoreLarge(t *testing.T, src, dst storekit.Store) {
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
