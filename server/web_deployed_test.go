package server_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/server/web"
	"github.com/certorder/certorder/storetest"
)

// The order page of a chain's current order, issued, shows the command
// that checks that a server serves its certificate (certorder deployed
// HOST), in English and Japanese, with a copy button: a wildcard's star
// becomes www, with a hint to name a host; a common name a shell would read
// as more than a word is never shown. Older orders of a chain, orders not
// issued and ended orders show none.
func TestWebDeployedCommand(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	doc := func(id int64, cn, names, status string) string {
		d := regexp.MustCompile(`"common_name":"[^"]*","dns_names":\[[^\]]*\]`).ReplaceAllLiteralString(storetest.OrderJSON(id, 0, "2099-01-01"),
			`"common_name":"`+cn+`","dns_names":[`+names+`]`)
		return strings.Replace(d, `"status":"issued","product"`, `"status":"`+status+`","product"`, 1)
	}
	if _, err := f.store.ImportOrders(context.Background(), "alice", storetest.Orders(t,
		doc(1030, "*.shop.example.com", `"*.shop.example.com"`, "issued"), doc(1031, "$(reboot)", `"host1031.example.com"`, "issued"),
		doc(1032, "host1032.example.com", "", "revoked"),
		storetest.PendingJSON(1033, "pending"))); err != nil {
		t.Fatal(err)
	}
	command := func(host string) string {
		return `<code class="copyable" id="deployed-command" aria-labelledby="deployed-label">certorder deployed ` + host + `</code>`
	}
	for lang, title := range map[string]string{"en": "Is this certificate deployed?", "ja": "この証明書は配置されていますか？"} {
		b := newBrowser(t, base, headerTransport{"Accept-Language": lang})
		b.signIn("alice", f.aliceKey)
		for id, host := range map[string]string{"1003": "old.example.com", "1030": "www.shop.example.com", "1031": "host1031.example.com"} {
			p := b.get("/orders/" + id)
			if p.status != 200 || !strings.Contains(p.body, command(host)) || !strings.Contains(p.body, title) ||
				!strings.Contains(p.body, `<button type="button" data-copy="deployed-command"`) ||
				!strings.Contains(p.body, `<script src="/static/copy.js"></script>`) || strings.Contains(p.body, "reboot)</code>") ||
				!strings.Contains(p.body, "certorder deployed --help") || !strings.Contains(p.body, "--nagios") {
				t.Errorf("%s /orders/%s: %d, no command for %s:\n%s", lang, id, p.status, host, p.body)
			}
			if wildcard := strings.Contains(p.body, `class="hint">`+map[string]string{"en": "This is a wildcard", "ja": "ワイルドカード"}[lang]); wildcard != (id == "1030") {
				t.Errorf("%s /orders/%s: the wildcard hint shown: %v", lang, id, wildcard)
			}
			if csp := p.header.Get("Content-Security-Policy"); !strings.HasSuffix(csp, "; script-src 'self'") {
				t.Errorf("%s /orders/%s: CSP %q", lang, id, csp)
			}
		}
		for _, id := range []string{"1001", "1002", "1032", "1033"} { // renewed, renewed, revoked, pending
			if p := b.get("/orders/" + id); p.status != 200 || strings.Contains(p.body, "deployed-command") || strings.Contains(p.body, "copy.js") {
				t.Errorf("%s /orders/%s: %d, a command shown:\n%s", lang, id, p.status, p.body)
			}
		}
	}
}

func TestDeployedHost(t *testing.T) {
	for _, tc := range []struct {
		cn       string
		names    []string
		host     string
		wildcard bool
	}{
		{"www.Example.com", []string{"example.com"}, "www.example.com", false},
		{"*.example.com", []string{"*.example.com", "example.com"}, "example.com", false},
		{"*.example.com", nil, "www.example.com", true},
		{"", []string{"*.a.example.com", "b.example.com"}, "b.example.com", false},
		{"a;b.example.com", []string{"`id`.example.com"}, "", false},
		{"*.$(id).com", nil, "", false},
		{"Some Company Ltd", []string{"shop.example.com"}, "shop.example.com", false},
	} {
		host, wildcard := web.DeployedHost(tc.cn, tc.names)
		if host != tc.host || wildcard != tc.wildcard {
			t.Errorf("DeployedHost(%q, %q) = %q, %v; want %q, %v", tc.cn, tc.names, host, wildcard, tc.host, tc.wildcard)
		}
	}
}
