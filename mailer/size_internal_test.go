package mailer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
)

// The largest digest there can be, as sent: MaxDigestItems events in
// Japanese (three octets a character, quoted-printable makes nine), each
// order's common name and status at the bound of a value and escaped at
// length, more events than it lists; under 1 MB, so within any relay's
// SIZE worth the name, a mass revocation's day included.
func TestDigestSizeBound(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cn := strings.Repeat("証\x1b", 60)
	var told []notice.Told
	for i := range notice.MaxDigestItems + 50 {
		data, _ := json.Marshal(map[string]any{"order_id": 100000 + i, "status": cn, "previous_status": cn})
		told = append(told, notice.Told{Event: certorder.Event{Type: certorder.EventOrderStatusChanged, Data: data, At: now}, Now: now,
			Order: &certorder.Order{ID: int64(100000 + i), Status: "revoked", PlanTill: "2027-03-01",
				Certificate: certorder.Certificate{CommonName: cn, ValidTill: "2027-02-20"}}})
	}
	a := certorder.NoticeAddress{ID: 1, Member: strings.Repeat("m", 64), Address: strings.Repeat("l", 64) + "@example.com", Lang: "ja",
		Secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQ="}
	const total = 83000 // the mass revocation of docs/OPERATIONS.md
	start := time.Now()
	m, err := notice.Texts{PublicURL: "https://certorder.example"}.Compose(notice.Notice{ID: 1, Kind: notice.KindDigest,
		Day: "2026-12-01", Address: a}, told, total)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := Config{From: "noreply@certorder.example"}.message(m, now)
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	if _, err := msg.WriteTo(&raw); err != nil {
		t.Fatal(err)
	}
	t.Logf("the largest digest: %d bytes, composed and rendered in %v", raw.Len(), time.Since(start))
	if raw.Len() >= 1_000_000 {
		t.Errorf("the largest digest is %d bytes", raw.Len())
	}
	if want := fmt.Sprintf("%d ", total-notice.MaxDigestItems); !strings.Contains(m.Text, want) || strings.Count(m.Text, "注文を開く") != notice.MaxDigestItems {
		t.Errorf("the digest does not list %d and say %d more", notice.MaxDigestItems, total-notice.MaxDigestItems)
	}
}
