package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

func testRenewalChain(t *testing.T, s storekit.Store) {
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

func testRenewals(t *testing.T, s storekit.Store) {
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
