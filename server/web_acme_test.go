package server_test

import (
	"context"
	"html"
	"strings"
	"testing"

	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/storetest"
)

// The order page shows the ACME directory URL for the newest order of its
// chain when the operator set a template, and nothing when not.
func TestWebACMEURL(t *testing.T) {
	t.Parallel()
	const tmpl = "https://one.digicert.com/mpki/api/v1/acme/v2/directory?action=renew&orderId={orderId}"
	f, base := webFixture(t, server.Config{ACMEURLTemplate: tmpl})
	ctx := context.Background()
	canceled := `{"OrderId":1021,"certificate":{"common_name":"host1021.example.com","status":"canceled"},"status":"canceled",` +
		`"product":{"name_id":"ssl_basic","name":"Basic","type":"ssl_certificate"}}`
	if _, err := f.store.ImportOrders(ctx, "alice", storetest.Orders(t, storetest.OrderJSON(1020, 0, "2099-01-01"), canceled)); err != nil {
		t.Fatal(err)
	}
	if err := f.store.RecordRenewal(ctx, 1020, 1021); err != nil {
		t.Fatal(err)
	}
	want := html.EscapeString(strings.ReplaceAll(tmpl, "{orderId}", "1003"))
	for lang, title := range map[string]string{"en": "ACME directory URL", "ja": "ACME ディレクトリ URL"} {
		b := newBrowser(t, base, headerTransport{"Accept-Language": lang})
		b.signIn("alice", f.aliceKey)
		for _, id := range []string{"1001", "1003"} { // an old order of the chain, and the newest
			p := b.get("/orders/" + id)
			if p.status != 200 || !strings.Contains(p.body, `<code class="copyable" id="acme-url" aria-labelledby="acme-url-label">`+want+`</code>`) ||
				!strings.Contains(p.body, title) || !strings.Contains(p.body, `<button type="button" data-copy="acme-url"`) ||
				!strings.Contains(p.body, `<script src="/static/copy.js"></script>`) ||
				!strings.Contains(html.UnescapeString(p.body), "certorder acme-url --help") || strings.Contains(p.body, "docs/ACME.md") {
				t.Errorf("%s /orders/%s: %d, no URL for 1003:\n%s", lang, id, p.status, p.body)
			}
			if csp := p.header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "; script-src 'self'") || strings.Contains(csp, "unsafe") {
				t.Errorf("%s /orders/%s: CSP %q", lang, id, csp)
			}
		}
		// A chain ending in a canceled order: no URL, a note, no script.
		p := b.get("/orders/1020")
		if p.status != 200 || strings.Contains(p.body, `id="acme-url"`) || !strings.Contains(p.body, "1021") || strings.Contains(p.body, "copy.js") {
			t.Errorf("%s /orders/1020: %d\n%s", lang, p.status, p.body)
		}
		if csp := p.header.Get("Content-Security-Policy"); strings.Contains(csp, "script-src") {
			t.Errorf("%s /orders/1020: CSP %q", lang, csp)
		}
		if js := b.get("/static/copy.js"); js.status != 200 || !strings.Contains(js.body, "navigator.clipboard") {
			t.Errorf("copy.js: %d", js.status)
		}
	}

	// Not set: nothing shown, no script allowed.
	f, base = webFixture(t, server.Config{})
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	p := b.get("/orders/1001")
	if p.status != 200 || strings.Contains(p.body, `id="acme-url"`) || strings.Contains(p.body, "copy.js") ||
		strings.Contains(p.header.Get("Content-Security-Policy"), "script-src") {
		t.Errorf("without a template: %d\n%s", p.status, p.body)
	}

	// A template without {orderId}, or not https, is refused.
	for _, bad := range []string{"https://acme.example/directory?orderId=1", "http://acme.example/directory?orderId={orderId}", "ftp://x/{orderId}"} {
		if _, err := server.New(f.store, server.Config{Web: true, ACMEURLTemplate: bad}); err == nil {
			t.Errorf("template %q accepted", bad)
		}
	}
}
