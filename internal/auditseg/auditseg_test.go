package auditseg_test

import (
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/auditseg"
)

func segments(segs ...[]byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for _, s := range segs {
			if !yield(s, nil) {
				return
			}
		}
	}
}

// A segment gives back what went in, trimmed as the trail keeps it, to the
// microsecond, in the order written.
func TestAuditSegmentRoundTrip(t *testing.T) {
	base := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)
	in := []certorder.AuditEntry{
		{Time: base, Member: "alice", KeyID: "0123456789ab", Action: "OrderInfo", OrderID: 1 << 62, ClientIP: "192.0.2.1"},
		{Time: base.Add(-time.Hour), Member: "cok_0123456789ab_secret", Action: "a\x00b\xffc", Outcome: 140, ClientIP: "2001:db8::1", Count: 5000},
		{Time: time.Unix(0, 0), Member: strings.Repeat("é", 40), Action: strings.Repeat("x", 100), Outcome: 111},
	}
	seg, oldest, newest := auditseg.Encode(in)
	if !oldest.Equal(time.Unix(0, 0)) || !newest.Equal(base.Truncate(time.Microsecond)) {
		t.Fatalf("bounds %v, %v", oldest, newest)
	}
	got, err := auditseg.Decode(seg)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]certorder.AuditEntry, len(in))
	for i, e := range in {
		e = e.Trimmed()
		e.Time = e.Time.Truncate(time.Microsecond).UTC()
		e.Count = max(e.Count, 1)
		want[i] = e
	}
	if !slices.Equal(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	if strings.Contains(got[1].Member, "secret") {
		t.Fatal("a key in the member field was kept")
	}
	// Every prefix of a segment but the whole is refused, never a panic.
	for n := range len(seg) {
		if es, err := auditseg.Decode(seg[:n]); err == nil && n != 0 && len(es) == len(in) {
			t.Fatalf("a segment cut to %d bytes decodes whole", n)
		}
	}
}

// A query over segments and legacy rows: newest first, ties in the order
// written (the later first), filtered by member and time, cut to the limit.
func TestAuditSegmentsQuery(t *testing.T) {
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	legacy := []certorder.AuditEntry{ // newest first, as the legacy table's query returns them
		{Time: at(1), Member: "alice", OrderID: 2},
		{Time: at(1), Member: "bob", OrderID: 1},
	}
	seg1, _, _ := auditseg.Encode([]certorder.AuditEntry{
		{Time: at(3), Member: "alice", OrderID: 3}, {Time: at(1), Member: "alice", OrderID: 4}})
	seg2, _, _ := auditseg.Encode([]certorder.AuditEntry{
		{Time: at(2), Member: "bob", OrderID: 5}, {Time: at(3), Member: "alice", OrderID: 6}})
	ids := func(q certorder.AuditQuery) []int64 {
		t.Helper()
		es, err := auditseg.Query(q, legacy, segments(seg1, seg2))
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range es {
			got = append(got, e.OrderID)
		}
		return got
	}
	for _, tc := range []struct {
		q    certorder.AuditQuery
		want []int64
	}{
		{certorder.AuditQuery{}, []int64{6, 3, 5, 4, 2, 1}},
		{certorder.AuditQuery{Member: "alice"}, []int64{6, 3, 4, 2}},
		{certorder.AuditQuery{Since: at(2)}, []int64{6, 3, 5}},
		{certorder.AuditQuery{Limit: 1}, []int64{6}},
		{certorder.AuditQuery{Member: "bob", Limit: 1}, []int64{5}},
	} {
		if got := ids(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.q, got, tc.want)
		}
	}
	if _, err := auditseg.Query(certorder.AuditQuery{}, nil, segments([]byte{9, 1, 2})); err == nil {
		t.Fatal("a segment of an unknown version was read")
	}
}

func TestPruneAuditSegment(t *testing.T) {
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	seg, _, _ := auditseg.Encode([]certorder.AuditEntry{
		{Time: base, OrderID: 1}, {Time: base.Add(-time.Second), OrderID: 2}, {Time: base.Add(time.Second), OrderID: 3}})
	kept, dropped, err := auditseg.Prune(seg, base)
	if err != nil || dropped != 1 {
		t.Fatalf("dropped %d, %v", dropped, err)
	}
	oldest, newest, err := auditseg.Bounds(kept)
	if err != nil || !oldest.Equal(base) || !newest.Equal(base.Add(time.Second)) {
		t.Fatalf("kept %v..%v, %v", oldest, newest, err)
	}
	if kept, dropped, _ := auditseg.Prune(seg, base.Add(time.Hour)); kept != nil || dropped != 3 {
		t.Fatalf("all old: kept %v, dropped %d", kept, dropped)
	}
	if got := auditseg.CeilMicro(base.Add(1)); got != base.UnixMicro()+1 {
		t.Fatalf("CeilMicro = %d", got)
	}
}

// BenchmarkEncodeAuditSegment is the writer's CPU per entry before the store.
func BenchmarkEncodeAuditSegment(b *testing.B) {
	es := make([]certorder.AuditEntry, 2048)
	for i := range es {
		es[i] = certorder.AuditEntry{Time: time.Now(), Member: "member-1", KeyID: "0123456789ab", Action: "OrderInfo",
			OrderID: int64(i + 100000), ClientIP: "192.0.2.7"}
	}
	for b.Loop() {
		auditseg.Encode(es)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(es)), "ns/entry")
}
