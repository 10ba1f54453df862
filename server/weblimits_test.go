package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/server"
)

// from is a transport whose requests come from ip, as a trusted proxy
// (the test's own loopback peer) says in X-Forwarded-For.
type from string

func (ip from) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", string(ip))
	return http.DefaultTransport.RoundTrip(r)
}

// The member web page is under per-address limits, apart from the API's: a
// flood of signed-in form POSTs, of the confirmation and unsubscribe pages
// and of sign-ins from one address is refused with 429, Retry-After and a
// readable page in the member's language, while another address is served
// (and the flooding address's API budget and the static files are
// untouched); the refusals are a few counted entries in the audit trail,
// not one each (issue 46: 2,000 POSTs from one address all answered, 1,959
// audit entries).
func TestWebPerAddressLimits(t *testing.T) {
	t.Parallel()
	now := time.Now() // the clock stands still: no bucket refills during the test
	const burst = 50  // pages; forms a fifth of it, 10
	f, base := webFixture(t, server.Config{Notices: true, AuditRetention: time.Hour, Now: func() time.Time { return now },
		Limits: server.Limits{WebRate: 1, WebBurst: burst, IPRate: 1, IPBurst: 5,
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
	flooder := newBrowser(t, base, from("127.0.0.2"))
	if p := flooder.signIn("alice", f.aliceKey); p.status != http.StatusSeeOther { // 2 page requests, 1 form
		t.Fatalf("sign-in: %d", p.status)
	}
	csrf := flooder.get("/notices").csrf(t) // 3 pages

	// Signed-in form POSTs: the forms' burst less the sign-in's, then 429.
	answered, refused := 0, 0
	for i := range 200 {
		p := flooder.post("/notices", url.Values{"csrf": {csrf}, "address": {fmt.Sprintf("n%d@acme.example", i)}, "lang": {"en"}})
		switch {
		case p.status == http.StatusTooManyRequests:
			refused++
			if i == 199 {
				mustContain(t, "the refusal", p, "Too many requests from your address. Wait a moment, then try again.")
				if p.header.Get("Retry-After") == "" || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
					t.Errorf("refusal headers: %v", p.header)
				}
			}
		default:
			answered++
		}
	}
	if answered != burst/5-1 || refused != 200-answered {
		t.Errorf("of 200 form POSTs from one address %d were answered, %d refused; want %d answered", answered, refused, burst/5-1)
	}
	// The pages' bucket is spent too, by the forms that were answered and
	// those refused by the pages' own count; then even a GET is refused.
	for range burst {
		flooder.get("/orders")
	}
	if p := flooder.get("/orders"); p.status != http.StatusTooManyRequests {
		t.Errorf("a page after the flood: %d", p.status)
	}
	// Not the static files, nor the address's API budget.
	if p := flooder.get("/static/style.css"); p.status != 200 {
		t.Errorf("the stylesheet for the flooding address: %d", p.status)
	}
	if status, _, _ := f.postFrom(t, "127.0.0.2", f.alice("Auth")); status != 200 {
		t.Errorf("the flooding address's API call: %d", status)
	}

	// Another address is served meanwhile, signed in or not.
	other := newBrowser(t, base, from("127.0.0.3"))
	if p := other.signIn("alice", f.aliceKey); p.status != http.StatusSeeOther {
		t.Errorf("another address's sign-in: %d", p.status)
	}
	if p := other.get("/orders"); p.status != 200 {
		t.Errorf("another address's page: %d", p.status)
	}

	// Unauthenticated floods: the confirmation and unsubscribe links and
	// sign-in, each from an address of its own; the refusal in Japanese
	// for a Japanese browser.
	for i, flood := range []struct {
		name string
		do   func(b *browser) page
		max  int // answered at most
	}{
		{"confirmation page", func(b *browser) page { return b.get("/notices/confirm?t=c.1.2.x") }, burst},
		{"unsubscribe page", func(b *browser) page { return b.get("/notices/unsubscribe?t=u.1.x") }, burst},
		{"one-click unsubscribe", func(b *browser) page { return b.post("/notices/unsubscribe?t=u.1.x", url.Values{}) }, burst / 5},
		{"confirm", func(b *browser) page { return b.post("/notices/confirm", url.Values{"t": {"c.1.2.x"}}) }, burst / 5},
		{"sign-in", func(b *browser) page { return b.post("/signin", url.Values{"name": {"alice"}, "key": {"x"}}) }, burst / 5},
	} {
		b := newBrowser(t, base, from(fmt.Sprintf("127.0.1.%d", i)))
		answered := 0
		var last page
		for range 3 * burst {
			if last = flood.do(b); last.status != http.StatusTooManyRequests {
				answered++
			}
		}
		if answered > flood.max || answered == 0 {
			t.Errorf("%s: %d of %d answered, want 1 to %d", flood.name, answered, 3*burst, flood.max)
		}
		if last.status != http.StatusTooManyRequests {
			t.Errorf("%s: the last answer %d", flood.name, last.status)
		}
	}
	ja, _ := http.NewRequest(http.MethodGet, base+"/signin", nil)
	ja.Header.Set("Accept-Language", "ja")
	resp, err := (&http.Client{Transport: from("127.0.1.0")}).Do(ja)
	if err != nil {
		t.Fatal(err)
	}
	if p := read(t, resp); p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "このアドレスからのリクエストが多すぎます") {
		t.Errorf("the refusal in Japanese: %d\n%s", p.status, p.body)
	}

	// The audit trail: the refusals counted per address, a few entries.
	f.handler.Close()
	es, err := f.store.Audit(context.Background(), certorder.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	entries, counted, adds := 0, 0, 0
	for _, e := range es {
		switch {
		case e.Action == "web" && e.Outcome == 140:
			entries++
			counted += e.Count
		case e.Action == "web NoticeAdd":
			adds++
		}
	}
	// (An entry per address and flush of the audit writer, 250 ms: a few
	// dozen on a slow machine, for hundreds of refusals.)
	if entries == 0 || entries*10 > counted || counted < refused {
		t.Errorf("audit: %d entries counting %d refusals (the form flood alone refused %d)", entries, counted, refused)
	}
	if adds > burst/5 {
		t.Errorf("audit: %d notice additions", adds)
	}
}
