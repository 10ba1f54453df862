package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/server"
)

// BenchmarkConfirmRefusal times the refusal of a forged confirmation link
// for an address that exists and for one that does not: the two should
// cost the same, so that timing says nothing of which IDs exist.
func BenchmarkConfirmRefusal(b *testing.B) {
	cfg := server.Config{Notices: true, Web: true}
	f := newFixture(b, testdb.SQLite(b), cfg)
	base := strings.TrimSuffix(f.url, "/api/digicert/")
	a, _ := notice.NewAddress("ops@acme.example", "en", nil)
	a.CreatedAt = today
	m, _ := f.store.FindMember(context.Background(), "alice")
	a, err := f.store.AddNoticeAddress(context.Background(), m.ID, a, 5)
	if err != nil {
		b.Fatal(err)
	}
	forged := notice.ConfirmToken(a)
	forged = forged[:len(forged)-4] + "AAAA"
	missing := strings.Replace(forged, "c.1.", "c.999999.", 1)
	for name, token := range map[string]string{"existing": forged, "missing": missing} {
		b.Run(name, func(b *testing.B) {
			body := url.Values{"t": {token}}.Encode()
			for b.Loop() {
				resp, err := http.Post(base+"/notices/confirm", "application/x-www-form-urlencoded", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					b.Fatalf("%s: %d", name, resp.StatusCode)
				}
			}
		})
	}
}
