package certorder_test

import (
	"fmt"
	"testing"

	"github.com/certorder/certorder"
)

// exportedHistory is n distinct issued certificates, serials written as
// CertCentral writes them (upper case, colons).
func exportedHistory(n int) []certorder.Certificate {
	certs := make([]certorder.Certificate, n)
	for i := range certs {
		certs[i] = certorder.Certificate{ID: int64(i + 1), SerialNumber: fmt.Sprintf("0A:%02X:%02X:%02X", i>>16, i>>8&0xff, i&0xff),
			Status: "issued"}
	}
	return certs
}

// A restored history is recorded in time linear in the certificates
// exported (issue 46: 5,000 of one order did not finish in 120 s): the
// bound is kept while recording, and no comparison allocates.
func TestRestoredHistoryLinear(t *testing.T) {
	for _, n := range []int{0, 1, certorder.MaxCertificates, certorder.MaxCertificates + 1, 5000} {
		exported := exportedHistory(n)
		o := &certorder.Order{ID: 7}
		if n > 0 {
			o.Certificate = exported[n-1]                                      // the current certificate ends the export, as Write writes it
			o.Certificate.SerialNumber = "0a" + o.Certificate.SerialNumber[3:] // another spelling of it
		}
		got := certorder.RestoredHistory(o, exported)
		want := exported[max(0, n-certorder.MaxCertificates):]
		if len(got) != len(want) {
			t.Fatalf("%d exported: %d in the history, want %d", n, len(got), len(want))
		}
		for i := range want {
			if want[i].ID != got[i].ID || (i < len(want)-1 && got[i].SerialNumber != want[i].SerialNumber) {
				t.Fatalf("%d exported: entry %d = %+v, want %+v", n, i, got[i], want[i])
			}
		}
		if n > 0 && got[len(got)-1].SerialNumber != o.Certificate.SerialNumber {
			t.Errorf("%d exported: the current certificate is recorded as %+v", n, got[len(got)-1])
		}
		// Per certificate at most one allocation in the mean (the history's
		// copies, once per MaxCertificates, and the result); a comparison
		// that made SerialKeys made ~n*MaxCertificates.
		allocs := testing.AllocsPerRun(3, func() { certorder.RestoredHistory(o, exported) })
		if limit := float64(10 + n/10); allocs > limit {
			t.Fatalf("%d exported: %.0f allocations, want at most %.0f", n, allocs, limit)
		}
	}
}

// A certificate that has left the history (more than MaxCertificates after
// it) is recorded anew, as the import records it, and the history stays
// bounded.
func TestRestoredHistoryBoundWhileRecording(t *testing.T) {
	exported := exportedHistory(certorder.MaxCertificates + 1)
	exported = append(exported, exported[0]) // the first again, now out of the window
	got := certorder.RestoredHistory(&certorder.Order{ID: 7, Certificate: exported[0]}, exported)
	if len(got) != certorder.MaxCertificates || got[len(got)-1].ID != 1 || got[0].ID != 3 {
		t.Fatalf("history of %d: first %d, last %d", len(got), got[0].ID, got[len(got)-1].ID)
	}
}

// PlanCertificates keeps the replaced certificates apart from the order's
// current one, which is its history's last entry (Seq CurrentSeq): a new
// order adds nothing, a reissue adds the certificate it replaced, a
// certificate brought up to date adds nothing, one current again leaves
// its place, and the entries stay within MaxCertificates-1.
func TestPlanCertificates(t *testing.T) {
	a := certorder.Certificate{ID: 1, SerialNumber: "0A", Status: "issued"}
	b := certorder.Certificate{ID: 2, SerialNumber: "0B", Status: "issued"}
	pending := certorder.Certificate{ID: 3, Status: "reissue_pending"}
	issued := certorder.Certificate{ID: 3, SerialNumber: "0C", Status: "issued"}
	entry := func(seq int64, c certorder.Certificate) certorder.CertificateEntry {
		return certorder.CertificateEntry{OrderID: 7, Seq: seq, Certificate: c}
	}
	plan := func(cur certorder.Certificate, history ...certorder.CertificateEntry) string {
		p := certorder.PlanCertificates(map[int64][]certorder.CertificateEntry{7: history},
			[]*certorder.Order{{ID: 7, Certificate: cur}})
		out := fmt.Sprint("removed ", p.Removed, " added")
		for _, e := range p.Entries {
			out += fmt.Sprintf(" %d/%d", e.Seq, e.ID)
		}
		if r := p.Reissues[7]; r != nil {
			out += fmt.Sprintf(" reissue %d after %d", r.Certificate.ID, r.PreviousCertificate.ID)
		}
		return out
	}
	current := certorder.CurrentSeq
	for _, c := range []struct{ name, got, want string }{
		{"a new order", plan(a), "removed [] added"},
		{"the same certificate", plan(a, entry(current, a)), "removed [] added"},
		{"a reissue", plan(b, entry(current, a)), "removed [] added 0/1 reissue 2 after 1"},
		{"a reissue pending", plan(pending, entry(5, a), entry(current, b)), "removed [] added 0/2"},
		{"the pending one issued", plan(issued, entry(5, a), entry(6, b), entry(current, pending)),
			"removed [] added reissue 3 after 2"},
		{"current again", plan(a, entry(5, a), entry(current, b)), "removed [5] added 0/2"},
		{"no certificate now", plan(certorder.Certificate{}, entry(current, a)), "removed [] added 0/1"},
		{"none before either", plan(certorder.Certificate{}, entry(5, a)), "removed [] added"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.name, c.got, c.want)
		}
	}

	full := make([]certorder.CertificateEntry, 0, certorder.MaxCertificates)
	for i := range certorder.MaxCertificates - 1 {
		full = append(full, entry(int64(10+i), certorder.Certificate{ID: int64(100 + i), SerialNumber: fmt.Sprintf("%X", 0x100+i)}))
	}
	full = append(full, entry(current, a))
	p := certorder.PlanCertificates(map[int64][]certorder.CertificateEntry{7: full}, []*certorder.Order{{ID: 7, Certificate: b}})
	if len(p.Entries) != 1 || p.Entries[0].ID != 1 || len(p.Removed) != 1 || p.Removed[0] != 10 {
		t.Errorf("a full history: added %+v, removed %v", p.Entries, p.Removed)
	}
}
