package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

// A member's look-up of a certificate (CertificateCheck's) visits the
// member's certificates alone, through the index by key and member: a
// serial or thumbprint on thousands of another member's certificates costs
// what a missing one costs (issue 46: 12 ms against 0.9), so that the time
// of the answer says nothing of other members' certificates. The operator's
// look-up across members finds them all.
func testFindCertificatesOfMember(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	alice, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, err = s.AddMember(ctx, "bob")
	must(t, err)
	_, err = s.ImportOrders(ctx, "alice", Orders(t, CertJSON(1, 501, "0A01", "2026-03-01", "2026-09-16", "2029-03-01")))
	must(t, err)
	const held = 5000 // bob's orders whose certificate has one serial (an import that gave it to all)
	docs := make([]string, held)
	for i := range docs {
		docs[i] = CertJSON(int64(100+i), int64(10000+i), "0B0B", "2026-03-01", "2026-09-16", "2029-03-01")
	}
	_, err = s.ImportOrders(ctx, "bob", Orders(t, docs...))
	must(t, err)
	thumb := strings.Repeat("0b", 20) // CertJSON's thumbprint of serial 0B0B

	all, err := s.FindCertificates(ctx, certorder.CertificateQuery{Serials: []string{"b0b"}})
	must(t, err)
	if len(all) != held || all[0].Member != "bob" {
		t.Fatalf("the operator's look-up found %d certificates, want %d of bob's", len(all), held)
	}
	lookUp := func(q certorder.CertificateQuery) time.Duration {
		t.Helper()
		q.MemberID = alice.ID
		start := time.Now()
		ms, err := s.FindCertificates(ctx, q)
		took := time.Since(start)
		must(t, err)
		if len(ms) != 0 {
			t.Fatalf("alice's look-up of %+v found %+v", q, ms[0])
		}
		return took
	}
	for _, kind := range []struct {
		name          string
		held, missing certorder.CertificateQuery
	}{
		{"serial", certorder.CertificateQuery{Serials: []string{"b0b"}}, certorder.CertificateQuery{Serials: []string{"c0c"}}},
		{"thumbprint", certorder.CertificateQuery{Thumbprints: []string{thumb}}, certorder.CertificateQuery{Thumbprints: []string{strings.Repeat("0c", 20)}}},
	} {
		// Interleaved, and the fastest of each kept: what the work costs,
		// without the machine's other load.
		var heldTimes, missingTimes []time.Duration
		for range 40 {
			heldTimes = append(heldTimes, lookUp(kind.held))
			missingTimes = append(missingTimes, lookUp(kind.missing))
		}
		h, m := slices.Min(heldTimes), slices.Min(missingTimes)
		t.Logf("by %s: on %d of another member's certificates %v, missing %v (fastest of 40)", kind.name, held, h, m)
		if h > 3*m+500*time.Microsecond {
			t.Errorf("by %s: a look-up of a key on %d of another member's certificates took %v, a missing one %v: "+
				"the member is not in the index look-up", kind.name, held, h, m)
		}
	}
}
