package certorder_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/certorder/certorder"
)

func TestDaysRemaining(t *testing.T) {
	now := time.Date(2026, 3, 10, 23, 59, 0, 0, time.FixedZone("JST", 9*3600)) // 14:59 UTC
	for _, tc := range []struct {
		till string
		want int
	}{
		{"2026-03-10", 0},
		{"2026-03-11", 1},
		{"2026-03-09", -1},
		{"2027-03-10", 365},
		{"2024-02-29", -740},
	} {
		if got := certorder.DaysRemaining(tc.till, now); got != tc.want {
			t.Errorf("DaysRemaining(%s) = %d, want %d", tc.till, got, tc.want)
		}
	}
}

// OrderEnded ignores case, white space at either end and invisible
// characters, and takes the British spelling too.
func TestOrderEnded(t *testing.T) {
	for status, ended := range map[string]bool{"canceled": true, "Canceled": true, "CANCELLED": true, "rejected": true,
		"Rejected": true, "pending": false, "issued": false, " canceled": true, "rejected\n": true, "\u200bcancel\ufeffled": true,
		"cancel led": false} {
		if certorder.OrderEnded(status) != ended {
			t.Errorf("OrderEnded(%q) = %v", status, !ended)
		}
	}
}

// CertificateIssued reads the status as OrderEnded does: " issued" is
// issued (it imported without valid_till).
func TestCertificateIssued(t *testing.T) {
	for status, issued := range map[string]bool{"issued": true, " issued": true, "ISSUED\t": true, "\u00a0revoked": true,
		"\u200bexpired": true, "\x1bissued": true, "pending": false, "": false, "is sued": false, "reissue_pending": false} {
		if certorder.CertificateIssued(status) != issued {
			t.Errorf("CertificateIssued(%q) = %v", status, !issued)
		}
	}
}

func TestRedactKeys(t *testing.T) {
	key, _, _ := certorder.NewKey("")
	id, _ := certorder.KeyID(key)
	for in, want := range map[string]string{
		"acme-corp":       "acme-corp",
		key:               "cok_" + id + "_[redacted]",
		"x " + key + " y": "x cok_" + id + "_[redacted] y",
		"COK_abcdef":      "cok_[redacted]",
		"cok_":            "cok_[redacted]",
		"Auth":            "Auth",
	} {
		if got := certorder.RedactKeys(in); got != want {
			t.Errorf("RedactKeys(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKeys(t *testing.T) {
	text, k, err := certorder.NewKey("x")
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := certorder.NewKey("x")
	if id, ok := certorder.KeyID(text); !ok || id != k.ID || text == other {
		t.Fatalf("KeyID(%s) = %s, %v; key ID %s", text, id, ok, k.ID)
	}
	if strings.Contains(string(k.Hash), text) || len(k.Hash) != 32 {
		t.Fatal("key hash is not a SHA-256")
	}
	for _, bad := range []string{"", "cok_", "cok_abc_def", "xyz_0123456789ab_secret", "cok_0123456789ab_", "cok_0123456789aG_x", "cok_01234567\x0089a_x"} {
		if _, ok := certorder.KeyID(bad); ok {
			t.Errorf("KeyID(%q) accepted", bad)
		}
	}
}

func TestAuditEntryTrimmed(t *testing.T) {
	e := certorder.AuditEntry{Member: strings.Repeat("é", 40), Action: "a\x00b\xffc"}.Trimmed()
	if len(e.Member) != 64 || !utf8.ValidString(e.Member) || e.Action != "a\uFFFDb\uFFFDc" {
		t.Fatalf("Trimmed = %q, %q", e.Member, e.Action)
	}
}

// DaysRemaining's reading of a date agrees with time.Parse's, across the
// whole range of years, exactly (in Unix seconds, not a time.Duration,
// whose ±106751 days it was once clamped to).
func TestDaysRemainingFast(t *testing.T) {
	slow := func(validTill string, now time.Time) int {
		till, err := time.Parse(certorder.DateLayout, validTill)
		if err != nil {
			return 0
		}
		y, m, d := now.UTC().Date()
		return int((till.Unix() - time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()) / 86400)
	}
	r := rand.New(rand.NewPCG(3, 4))
	nows := []time.Time{time.Date(2026, 3, 10, 23, 59, 0, 0, time.FixedZone("JST", 9*3600)), time.Unix(0, 0),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC)}
	for i := range 200000 {
		s := fmt.Sprintf("%04d-%02d-%02d", r.IntN(10000), r.IntN(14), r.IntN(33))
		if i%2 == 0 {
			s = time.Unix(r.Int64N(4e11)-2e11, 0).UTC().Format(certorder.DateLayout)
		}
		now := nows[i%len(nows)]
		if i%3 == 0 {
			now = time.Unix(r.Int64N(4e9), 0)
		}
		if got, want := certorder.DaysRemaining(s, now), slow(s, now); got != want {
			t.Fatalf("DaysRemaining(%q, %v) = %d, time.Parse says %d", s, now, got, want)
		}
	}
	for _, s := range []string{"", "2026-1-01", "2026-02-29", "2024-02-29", "0000-01-01", "9999-12-31", "2026-13-01", "2026/01/01", "+026-01-01"} {
		if got, want := certorder.DaysRemaining(s, nows[0]), slow(s, nows[0]); got != want {
			t.Fatalf("DaysRemaining(%q) = %d, want %d", s, got, want)
		}
	}
}
