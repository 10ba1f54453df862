package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/storekit"
)

// noticeSecret is a notice address's secret as notice.NewAddress makes
// one (the standard base64 of 32 bytes); a restore refuses a weaker one.
const noticeSecret = "BwwRFhsgJSovNDk+Q0hNUldcYWZrcHV6f4SJjpOYnaI="

// noticeLine is an export's line of a notice address.
func noticeLine(member, address, lang, events, secret string) string {
	return fmt.Sprintf(`{"type":"notice","member":%q,"address":%q,"lang":%q,"event_types":[%s],"secret":%q,"created_at":"2026-11-27T10:00:00Z"}`+"\n",
		member, address, lang, events, secret)
}

// A restore checks notice addresses as admin notice add does (the
// address, its language, event types and secret; at most
// MaxNoticeAddresses a member, one mailbox once) and refuses the file at
// the line of the first fault: nothing is restored.
func testRestoreNoticeChecks(t *testing.T, open func(t *testing.T) storekit.Store) {
	ctx := context.Background()
	head := `{"type":"member","name":"alice"}` + "\n" + `{"type":"member","name":"bob"}` + "\n" +
		`{"type":"order","member":"alice","order_id":1,"doc":` + OrderJSON(1, 0, "2030-01-01") + "}\n"
	ok := func(address string) string { return noticeLine("alice", address, "en", "", noticeSecret) }
	six := ""
	for i := range certorder.MaxNoticeAddresses + 1 {
		six += ok(fmt.Sprintf("n%d@a.example", i))
	}
	zeros := strings.Repeat("A", 43) + "="
	for _, tc := range []struct {
		name, lines string
		line        int // of the fault, head included
	}{
		{"one address too many", six, 3 + certorder.MaxNoticeAddresses + 1},
		{"a header in the address", ok("ops@a.example") + ok("crlf@a.example\r\nBcc: victim@b.example"), 5},
		{"no @", ok("no-at-all"), 4},
		{"a display name", ok("Ops <ops@a.example>"), 4},
		{"one mailbox spelt twice", ok("ops@a.example") + ok("n1@a.example") + ok("OPS@A.Example"), 6},
		{"an unknown language", noticeLine("alice", "ops@a.example", "xx", "", noticeSecret), 4},
		{"an unknown event type", noticeLine("alice", "ops@a.example", "en", `"order.renewed","order.bogus"`, noticeSecret), 4},
		{"a one-letter secret", noticeLine("alice", "ops@a.example", "en", "", "x"), 4},
		{"a short secret", noticeLine("alice", "ops@a.example", "en", "", "c2VjcmV0"), 4},
		{"a secret of zeros", noticeLine("alice", "ops@a.example", "en", "", zeros), 4},
		{"a secret not base64", noticeLine("alice", "ops@a.example", "en", "", noticeSecret[1:]), 4},
		{"before its member", noticeLine("carol", "ops@a.example", "en", "", noticeSecret), 4},
	} {
		s := open(t)
		err := s.Restore(ctx, export.Read(strings.NewReader(head+tc.lines)))
		if !errors.Is(err, certorder.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("line %d:", tc.line)) {
			t.Errorf("%s: %v, want ErrInvalid at line %d", tc.name, err, tc.line)
		}
		if err != nil && (strings.Contains(err.Error(), noticeSecret) || strings.Contains(err.Error(), zeros)) {
			t.Errorf("%s: the error shows the secret: %v", tc.name, err)
		}
		if ms, err := s.Members(ctx); err != nil || len(ms) != 0 {
			t.Errorf("%s: a refused restore left %v, %v", tc.name, ms, err)
		}
		s.Close()
	}

	// The checks refuse no sound export: as many addresses as allowed,
	// another member with the same address, and an address in another case
	// is kept in the one spelling NewAddress gives it.
	s := open(t)
	defer s.Close()
	sound := head + noticeLine("alice", "Ops@A.Example", "ja", `"order.renewed","order.renewed"`, noticeSecret) +
		noticeLine("bob", "ops@a.example", "en", "", noticeSecret)
	for i := 1; i < certorder.MaxNoticeAddresses; i++ {
		sound += ok(fmt.Sprintf("n%d@a.example", i))
	}
	must(t, s.Restore(ctx, export.Read(strings.NewReader(sound))))
	alice, err := s.FindMember(ctx, "alice")
	must(t, err)
	as, err := s.NoticeAddresses(ctx, alice.ID)
	must(t, err)
	if len(as) != certorder.MaxNoticeAddresses || as[0].Address != "ops@a.example" || as[0].Lang != "ja" ||
		len(as[0].EventTypes) != 1 || as[0].Secret != noticeSecret {
		t.Fatalf("restored %+v", as)
	}
}

// A restore is linear in the certificates an export gives: one order of
// 5,000 (issue 46: still running after 120 s) is restored within seconds,
// its newest MaxCertificates kept.
func testRestoreLongHistory(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	const n = 5000
	var certs []string
	for i := range n {
		certs = append(certs, fmt.Sprintf(`{"id":%d,"serial_number":"0A:%02X:%02X","thumbprint":"%040X","status":"issued","valid_till":"2026-03-01"}`,
			100000+i, i>>8, i&0xff, i))
	}
	file := `{"type":"member","name":"alice"}` + "\n" + `{"type":"order","member":"alice","order_id":1,"certificates":[` +
		strings.Join(certs, ",") + `],"doc":` + OrderJSON(1, 0, "2030-01-01") + "}\n"
	// Bounded in time (a quadratic restore would hold the test for
	// minutes); the bound is loose for a loaded machine: the restore
	// takes milliseconds.
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.Restore(ctx, export.Read(strings.NewReader(file))) }()
	select {
	case err := <-done:
		must(t, err)
	case <-ctx.Done():
		t.Fatalf("restoring one order of %d certificates took over %v", n, time.Since(start))
	}
	h, err := s.Certificates(ctx, []int64{1})
	must(t, err)
	got := h[1]
	if len(got) != certorder.MaxCertificates || got[0].ID != 100000+n-certorder.MaxCertificates+1 || got[len(got)-1].ID != 10 {
		t.Fatalf("restored history of %d entries: %+v ... %+v", len(got), got[0], got[len(got)-1])
	}
	t.Logf("one order of %d certificates restored in %v", n, time.Since(start))
}
