package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

func testAudit(t *testing.T, s storekit.Store) {
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

// LegacyAudit checks that entries of the audit table of one row per entry,
// written before segments, are still listed and pruned beside the new
// ones. insert writes such a row directly.
func LegacyAudit(t *testing.T, s storekit.Store, insert func(e certorder.AuditEntry) error) {
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
