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
