package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/smtptest"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/storetest"
)

// chromium finds Debian's Chromium, or skips the test (fails under CI=true).
// It prefers chromium-headless-shell, Chromium's headless-only build (the
// same Blink), to the full browser: the test took 8.7–9.1 s of CPU with it,
// 11.2–11.8 s with the full one's headless mode (2026-11-26, one 2-core
// machine, each run in a cgroup of its own). Debian's
// /usr/bin/chromium-headless-shell is a script that runs the browser
// without exec: killing it, as chromedp does when the test ends, left the
// browser running, so the binary behind it comes first.
func chromium(t *testing.T) string {
	for _, name := range []string{"/usr/lib/chromium/chromium-headless-shell", "chromium-headless-shell",
		"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but Chromium is not installed: .ci/run installs it (apt-get install chromium-headless-shell)")
	}
	t.Skip("browser test skipped: install Chromium to run it (Debian: apt-get install chromium-headless-shell, or chromium)")
	return ""
}

// axeSource is axe-core's script: $CERTORDER_AXE_JS, or the copy npm
// installs in the repository's .axe directory (see README, "Tests"). ""
// when there is none: the audit is then left out, and CI=true fails.
func axeSource(t *testing.T) string {
	path := os.Getenv("CERTORDER_AXE_JS")
	if path == "" {
		path = filepath.Join("..", "..", ".axe", "node_modules", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(path)
	if err == nil {
		return string(b)
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but axe-core is not installed (%v): npm install --prefix .axe axe-core", err)
	}
	t.Logf("accessibility audit left out: axe-core is not installed (%v); install it with: npm install --no-save --prefix .axe axe-core@4.11.0", err)
	return ""
}

// artifacts is where screenshots go: $CERTORDER_ARTIFACTS (CI sets it
// and keeps them), or "" for none. Without it the browser tests take no
// screenshot: taken into a temp dir they were encoded and thrown away, a
// second of Chromium's CPU a page at 1280 px (issue 41).
func artifacts(t *testing.T) string {
	dir := os.Getenv("CERTORDER_ARTIFACTS")
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// profileDir is a directory for Chromium's profile, removed when the test
// ends. Chromium's helper processes may still write in it for a moment
// after the browser has exited (t.TempDir's removal failed in CI with
// "directory not empty"), so the removal is tried again for a while.
func profileDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "certorder-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !poll.Within(10*time.Second, func() bool { err = os.RemoveAll(dir); return err == nil }) {
			t.Errorf("removing Chromium's profile: %v", err)
		}
	})
	return dir
}

// violation is one failed axe-core rule on a page.
type violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// audit runs axe-core on the page against WCAG 2.0 and 2.1, levels A and
// AA, and fails the test on any violation. DevTools evaluation is not
// subject to the page's CSP, so the page's policy stays as it is.
func audit(t *testing.T, axe, name string, audited *[]string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		if axe == "" {
			return nil
		}
		if err := chromedp.Evaluate(axe, nil).Do(ctx); err != nil {
			return fmt.Errorf("loading axe-core on %s: %w", name, err)
		}
		var vs []violation
		err := chromedp.Evaluate(`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}})
			.then(r => r.violations.map(v => ({id: v.id, impact: v.impact || "", help: v.help, nodes: v.nodes.map(n => n.html)})))`,
			&vs, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }).Do(ctx)
		if err != nil {
			return fmt.Errorf("axe-core on %s: %w", name, err)
		}
		for _, v := range vs {
			t.Errorf("WCAG 2.1 AA violation on %s: %s (%s): %s; %d element(s), e.g. %.200s", name, v.ID, v.Impact, v.Help, len(v.Nodes), v.Nodes)
		}
		*audited = append(*audited, name)
		return nil
	})
}

// timelineOrders are orders ending over the next months (and one expired,
// one past the timeline), so that the timeline has something to show.
func timelineOrders(now time.Time) string {
	var docs []string
	for i, days := range []int{5, 12, 45, 75, 110, 150, 200, 240, 300, 330, -8, 500} {
		docs = append(docs, storetest.OrderJSON(int64(20001+i), 0, now.AddDate(0, 0, days).UTC().Format(certorder.DateLayout)))
	}
	return "[" + strings.Join(docs, ",") + "]"
}

// browserOptions start Chromium (exe) headless as the browser tests need
// it: no sandbox or GPU, none of its calls home (this machine's network is
// closed), English, a profile of the test's own, a 1280×900 window.
func browserOptions(t *testing.T, exe string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("lang", "en-US"),
		// V8 interprets, compiling nothing: the pages and axe-core's audit of
		// each run for a second or two, too short for the compilers' work to
		// pay back. TestBrowser alone, the machine's CPU (/proc/stat), three
		// alternated runs: 34.0-34.8 s with them, 29.7-30.6 s without (issue 41,
		// docs/PERFORMANCE.md "Test suite time").
		chromedp.Flag("js-flags", "--jitless"),
		chromedp.UserDataDir(profileDir(t)),
		chromedp.WindowSize(1280, 900),
	)
}

// A member signs in, finds the current order of a renewal chain, rotates
// their key (creates one, signs out, signs in with it, revokes the old
// one), adds a webhook endpoint and sees a test event delivered to a real
// receiver, adds an address for e-mail notices and confirms it, views the
// timeline at desktop and phone widths, and switches to Japanese, in
// headless Chromium; axe-core audits every page.
//
// The member's five sessions (orders; timeline, then Japanese; keys;
// webhooks; notices) run at once, each in a browser context of its own
// (its cookies, language and permissions) of one browser, against one
// server: one after the other they took 13-18 s alone and 42.6 s in the
// suite (issue 41). The keys session revokes the demo's key, which ends
// that key's sessions, so the other four sign in with keys of their own;
// the timeline session's Japanese pages include the webhook endpoint's,
// which it visits once the webhooks session has seen its delivery.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a real browser: not with -short")
	}
	t.Parallel()
	exe := chromium(t)
	r := &browserRun{axe: axeSource(t), out: artifacts(t), hookDone: make(chan struct{})}
	r.endHooks = sync.OnceFunc(func() { close(r.hookDone) })
	c := newStoreCLI(t, testdb.SQLite(t))
	r.c = c
	c.ok("admin", "member", "add", "demo")
	if _, errOut, err := c.run(timelineOrders(time.Now()), "admin", "order", "import", "--member", "demo", "-"); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	// 20005 renewed by 20100, which CertCentral has not issued yet.
	if _, errOut, err := c.run(storetest.PendingJSON(20100, "pending"), "admin", "order", "import", "--member", "demo", "-"); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	c.ok("admin", "order", "renew", "20005", "20100")
	sessionKeys := map[string]string{}
	for _, name := range []string{"orders", "timeline", "webhooks", "notices"} {
		sessionKeys[name] = lastLine(c.ok("admin", "key", "create", "demo", "--label", "browser: "+name))
	}
	r.mail = smtptest.Start(t, false)
	endpoint, stdout := startServe(t, c, append([]string{"--demo", "--webhook-allow-private", // the receiver below is on loopback
		"--acme-url-template", "http://127.0.0.1:14000/dir?action=renew&orderId={orderId}"}, smtpArgs(t, r.mail)...)...)
	r.endpoint = endpoint
	r.base = strings.TrimSuffix(endpoint, "api/digicert/")
	sessionKeys["keys"] = regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browserOptions(t, exe)...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 180*time.Second)
	defer cancelTimeout()
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		t.Fatal(err)
	}
	r.browser = ctx

	sessions := []struct {
		name string
		run  func(f *browserSession, key string)
	}{{"orders", r.ordersSession}, {"timeline", r.timelineSession}, {"keys", r.keysSession}, {"webhooks", r.webhooksSession}, {"notices", r.noticesSession}}
	done := make([]*browserSession, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() { // t.Run may be called from several goroutines at once
			defer wg.Done()
			t.Run(s.name, func(t *testing.T) {
				ctx, cancel := chromedp.NewContext(r.browser, chromedp.WithNewBrowserContext())
				defer cancel()
				f := &browserSession{browserRun: r, t: t, ctx: ctx}
				done[i] = f
				s.run(f, sessionKeys[s.name])
			})
			if s.name == "webhooks" { // ended, failed or left out by -run
				r.endHooks()
			}
		}()
	}
	wg.Wait()
	var shots, audited []string
	for _, f := range done {
		if f != nil {
			shots, audited = append(shots, f.shots...), append(audited, f.audited...)
		}
	}
	for _, name := range shots {
		if fi, err := os.Stat(filepath.Join(r.out, name)); err != nil || fi.Size() < 1000 {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
	where := "none taken: CERTORDER_ARTIFACTS names no directory"
	if r.out != "" {
		where = fmt.Sprintf("%d in %s", len(shots), r.out)
	}
	t.Logf("screenshots: %s; axe-core audited %d pages: %s", where, len(audited), strings.Join(audited, ", "))
}

// browserRun is what TestBrowser's sessions share: the server, its store
// and mail server, one browser.
type browserRun struct {
	axe, out       string
	c              *cli
	mail           *smtptest.Server
	endpoint, base string
	browser        context.Context
	hookDone       chan struct{} // closed (by endHooks) once the webhooks session has
	hooked         atomic.Bool   // seen endpoint 1's delivery (then true) or has ended
	endHooks       func()
}

// browserSession is one of the member's sessions, in a browser context of
// its own: its screenshots and the pages it audited.
type browserSession struct {
	*browserRun
	t              *testing.T
	ctx            context.Context
	shots, audited []string
}

func (f *browserSession) check(name string) chromedp.Action {
	return audit(f.t, f.axe, name, &f.audited)
}

func (f *browserSession) shot(name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		if f.out == "" {
			return nil
		}
		var png []byte
		if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
			return err
		}
		f.shots = append(f.shots, name)
		return os.WriteFile(filepath.Join(f.out, name), png, 0o644)
	})
}

func (f *browserSession) signIn(key string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.WaitVisible(`#name`, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "demo", chromedp.ByQuery),
		chromedp.SendKeys(`#key`, key, chromedp.ByQuery),
		chromedp.Click(`form[action="/signin"] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`table.orders`, chromedp.ByQuery),
	}
}

// ordersSession signs in; the orders; the renewal chain to the current
// order; the search; a pending renewal.
func (r *browserRun) ordersSession(f *browserSession, key string) {
	t, ctx, base := f.t, f.ctx, r.base
	var heading, chain, ordersText, acmeURL, copied, deployedCmd, deployedCopied string
	err := chromedp.Run(ctx) // makes the browser context, whose ID the permission needs
	if err == nil {
		err = chromedp.Run(ctx,
			// The copy button writes to the clipboard, which the headless
			// shell allows only when granted (the full browser does without).
			browser.GrantPermissions([]browser.PermissionType{browser.PermissionTypeClipboardSanitizedWrite}).
				WithOrigin(strings.TrimSuffix(base, "/")).WithBrowserContextID(chromedp.FromContext(ctx).BrowserContextID),
			chromedp.Navigate(base),
			chromedp.WaitVisible(`#name`, chromedp.ByQuery),
			f.check("sign-in"), f.shot("signin.png"),
			f.signIn(key),
			chromedp.Text(`table.orders`, &ordersText, chromedp.ByQuery),
			f.check("orders"), f.shot("orders.png"),
			chromedp.Click(`#renewed`, chromedp.ByQuery),
			chromedp.Click(`form.filters button[type=submit]`, chromedp.ByQuery),
			chromedp.WaitVisible(`tr.superseded`, chromedp.ByQuery),
			f.check("orders with renewed ones"), f.shot("orders-renewed.png"),
			chromedp.Click(`td a[href="/orders/10001"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`ol.chain`, chromedp.ByQuery),
			chromedp.Text(`ol.chain`, &chain, chromedp.ByQuery),
			chromedp.Click(`ol.chain a[href="/orders/10003"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`h1 .current`, chromedp.ByQuery),
			chromedp.Text(`h1`, &heading, chromedp.ByQuery),
			// The copy button: hidden without script, shown by static/copy.js
			// (the page's CSP allows the site's own script).
			chromedp.WaitVisible(`button[data-copy="acme-url"]`, chromedp.ByQuery),
			chromedp.Text(`#acme-url`, &acmeURL, chromedp.ByQuery),
			chromedp.Click(`button[data-copy="acme-url"]`, chromedp.ByQuery),
			chromedp.Poll(`document.getElementById("acme-url-status").textContent`, &copied, chromedp.WithPollingTimeout(5*time.Second)),
			chromedp.Text(`#deployed-command`, &deployedCmd, chromedp.ByQuery),
			chromedp.Click(`button[data-copy="deployed-command"]`, chromedp.ByQuery),
			chromedp.Poll(`document.getElementById("deployed-command-status").textContent`, &deployedCopied, chromedp.WithPollingTimeout(5*time.Second)),
			chromedp.Click(`details summary`, chromedp.ByQuery),
			f.check("order"), f.shot("order.png"),
		)
	}
	if err != nil {
		t.Fatal(err)
	}
	if acmeURL != "http://127.0.0.1:14000/dir?action=renew&orderId=10003" || copied != "Copied." {
		t.Errorf("ACME URL on order 10003: %q, copy button said %q", acmeURL, copied)
	}
	if deployedCmd != "certorder deployed shop.example.com" || deployedCopied != "Copied." {
		t.Errorf("the check command on order 10003: %q, copy button said %q", deployedCmd, deployedCopied)
	}
	if strings.Contains(ordersText, "10001") || !strings.Contains(ordersText, "10003") || !strings.Contains(ordersText, "Current") {
		t.Errorf("orders page, renewed orders hidden: %q", ordersText)
	}
	if !strings.Contains(chain, "Order 10001 (this order)") || !strings.Contains(chain, "Order 10003 — current") {
		t.Errorf("renewal chain on order 10001: %q", chain)
	}
	if !strings.Contains(heading, "Order 10003") || !strings.Contains(heading, "current") {
		t.Errorf("the current order's heading: %q", heading)
	}
	// The search takes an order number, a serial or thumbprint of any
	// certificate an order has had, or a DNS name: the demo's 10003 by the
	// serial of the certificate its reissue replaced (colons, lower case),
	// 10001 by its number although renewed ones are hidden.
	search := func(q string) chromedp.Tasks {
		return chromedp.Tasks{
			chromedp.Navigate(base + "orders"),
			chromedp.WaitVisible(`#q`, chromedp.ByQuery),
			chromedp.SendKeys(`#q`, q, chromedp.ByQuery),
			chromedp.Click(`form.filters button[type=submit]`, chromedp.ByQuery),
			// The answer's field holds the search as its value attribute
			// (typing sets only the property): the new page, not the old.
			chromedp.WaitVisible(`#q[value="`+q+`"]`, chromedp.ByQuery),
		}
	}
	earlier := strings.ToLower(fmt.Sprintf("0%X", 520003*104729)) // demo.go: 10003's first certificate
	var colons []string
	for i := len(earlier); i > 0; i -= 2 {
		colons = append([]string{earlier[max(i-2, 0):i]}, colons...)
	}
	// The rows' order numbers (their first cells).
	const listed = `Array.from(document.querySelectorAll("table.orders tbody tr td:first-child")).map(td => td.textContent.trim()).join(" ")`
	var bySerial, byNumber, byName string
	err = chromedp.Run(ctx,
		search(strings.Join(colons, ":")),
		chromedp.Evaluate(listed, &bySerial),
		f.check("orders found by a serial"),
		search("10001"),
		chromedp.Evaluate(listed, &byNumber),
		search("mail.example"),
		chromedp.Evaluate(listed, &byName),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, got, want string }{
		{"an earlier certificate's serial", bySerial, "10003"},
		{"an order number", byNumber, "10001"},
		{"a DNS name", byName, "10004"},
	} {
		if tc.got != tc.want {
			t.Errorf("search by %s: orders %q, want %s alone", tc.what, tc.got, tc.want)
		}
	}

	// A renewal awaiting issuance: the chain leads to it, its page says so.
	var pendingNote, pendingChain string
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"orders/20005"),
		chromedp.WaitVisible(`ol.chain`, chromedp.ByQuery),
		chromedp.Text(`ol.chain`, &pendingChain, chromedp.ByQuery),
		chromedp.Click(`ol.chain a[href="/orders/20100"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`p.note.pending`, chromedp.ByQuery),
		chromedp.Text(`p.note.pending`, &pendingNote, chromedp.ByQuery),
		f.check("pending order"), f.shot("order-pending.png"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pendingChain, "Order 20100 — current, pending") || !strings.Contains(pendingNote, "Awaiting issuance") {
		t.Errorf("the pending renewal: chain %q, note %q", pendingChain, pendingNote)
	}
}

// timelineSession: the timeline, at desktop and phone widths (no sideways
// scrolling on a phone); then Japanese, remembered across pages; then
// signs out.
func (r *browserRun) timelineSession(f *browserSession, key string) {
	t, ctx, base := f.t, f.ctx, r.base
	var bars int
	var overflow bool
	err := chromedp.Run(ctx,
		chromedp.Navigate(base),
		f.signIn(key),
		chromedp.Click(`nav.sections a[href="/timeline"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.timeline`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("a.tl-row rect.tl-valid, a.tl-row rect.tl-expiring").length`, &bars),
		f.check("timeline"), f.shot("timeline.png"),
		chromedp.EmulateViewport(390, 844),
		chromedp.Reload(),
		chromedp.WaitVisible(`.timeline`, chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflow),
		f.check("timeline on a phone"), f.shot("timeline-phone.png"),
		chromedp.Navigate(base+"orders"),
		chromedp.WaitVisible(`table.orders`, chromedp.ByQuery),
		f.check("orders on a phone"), f.shot("orders-phone.png"),
		chromedp.EmulateViewport(1280, 900),
	)
	if err != nil {
		t.Fatal(err)
	}
	if bars < 10 {
		t.Errorf("the timeline shows %d bars", bars)
	}
	if overflow {
		t.Error("the timeline scrolls sideways on a phone")
	}

	// Japanese, remembered across pages; then sign out.
	var lang, title, timelineLang, deliveriesJa, location string
	err = chromedp.Run(ctx,
		chromedp.Click(`nav.languages a[lang="ja"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`html[lang="ja"] table.orders`, chromedp.ByQuery),
		chromedp.Text(`h1`, &title, chromedp.ByQuery),
		f.check("orders in Japanese"), f.shot("orders-ja.png"),
		chromedp.Navigate(base+"timeline"),
		chromedp.WaitVisible(`.timeline`, chromedp.ByQuery),
		chromedp.AttributeValue(`html`, "lang", &timelineLang, nil, chromedp.ByQuery),
		f.check("timeline in Japanese"), f.shot("timeline-ja.png"),
		chromedp.Navigate(base+"keys"),
		chromedp.WaitVisible(`table.keys`, chromedp.ByQuery),
		f.check("keys in Japanese"),
		// The webhooks session's endpoint, once it has its delivery.
		chromedp.ActionFunc(func(ctx context.Context) error {
			select {
			case <-r.hookDone:
			case <-ctx.Done():
				return ctx.Err()
			}
			if !r.hooked.Load() {
				return errors.New("the webhooks session (which -run must not leave out) ended before endpoint 1 had its delivery: no endpoint to see in Japanese")
			}
			return nil
		}),
		chromedp.Navigate(base+"webhooks/1"),
		chromedp.WaitVisible(`table.deliveries`, chromedp.ByQuery),
		chromedp.Text(`table.deliveries`, &deliveriesJa, chromedp.ByQuery),
		f.check("webhook endpoint in Japanese"),
		chromedp.Click(`form[action="/signout"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#name`, chromedp.ByQuery),
		chromedp.AttributeValue(`html`, "lang", &lang, nil, chromedp.ByQuery),
		chromedp.Location(&location),
		f.check("sign-in in Japanese"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if title != "注文一覧" || timelineLang != "ja" || lang != "ja" || !strings.Contains(deliveriesJa, "配信済み") {
		t.Errorf("Japanese: heading %q, timeline lang %q, sign-in lang %q, deliveries %q", title, timelineLang, lang, deliveriesJa)
	}
	if !strings.HasSuffix(location, "/signin") {
		t.Errorf("after sign-out the browser is at %s", location)
	}
	// Signed out, the orders page is out of reach.
	err = chromedp.Run(ctx, chromedp.Navigate(base+"orders"), chromedp.WaitVisible(`#name`, chromedp.ByQuery), chromedp.Location(&location))
	if err != nil || !strings.HasSuffix(location, "/signin") {
		t.Errorf("orders after sign-out: %s %v", location, err)
	}
}

// keysSession rotates the key: creates one, signs out, signs in with it,
// revokes the old one.
func (r *browserRun) keysSession(f *browserSession, oldKey string) {
	t, ctx, base, c, endpoint := f.t, f.ctx, r.base, r.c, r.endpoint
	oldID, _ := certorder.KeyID(oldKey)
	var newKey, keysText, location string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base),
		f.signIn(oldKey),
		chromedp.Click(`nav.sections a[href="/keys"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`table.keys`, chromedp.ByQuery),
		f.check("keys"), f.shot("keys.png"),
		chromedp.SendKeys(`#label`, "deploy on web2", chromedp.ByQuery),
		chromedp.Click(`form.create-key button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#new-key`, chromedp.ByQuery),
		chromedp.Text(`#new-key`, &newKey, chromedp.ByQuery),
		f.check("new key"), f.shot("key-created.png"),
		chromedp.Click(`form[action="/signout"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#name`, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	newKey = strings.TrimSpace(newKey)
	newID, ok := certorder.KeyID(newKey)
	if !ok || newID == oldID {
		t.Fatalf("the new key is not a key (%d characters)", len(newKey))
	}
	err = chromedp.Run(ctx,
		f.signIn(newKey),
		chromedp.Navigate(base+"keys"),
		chromedp.WaitVisible(`a[href="/keys/`+oldID+`/revoke"]`, chromedp.ByQuery),
		chromedp.Click(`a[href="/keys/`+oldID+`/revoke"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form.confirm`, chromedp.ByQuery),
		f.check("revoke confirmation"), f.shot("key-revoke.png"),
		chromedp.Click(`form.confirm button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`p.ok`, chromedp.ByQuery),
		chromedp.Text(`table.keys`, &keysText, chromedp.ByQuery),
		chromedp.Location(&location),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(location, "/keys?revoked="+oldID) || !strings.Contains(keysText, "deploy on web2") ||
		!regexp.MustCompile(`this session`).MatchString(keysText) || !strings.Contains(keysText, "Revoked") {
		t.Errorf("after revoking the old key: %s\n%s", location, keysText)
	}
	if _, _, err := c.run("", "auth", "--url", endpoint, "--access-name", "demo", "--access-key", oldKey); exitCode(err) != 3 {
		t.Errorf("the revoked key: %v, want exit 3 (credentials rejected)", err)
	}
	if _, _, err := c.run("", "auth", "--url", endpoint, "--access-name", "demo", "--access-key", newKey); err != nil {
		t.Errorf("the new key: %v", err)
	}
}

// webhooksSession adds an endpoint (its secret shown once), sends a test
// event, which a loopback receiver verifies with the Standard Webhooks
// reference library, and sees it delivered on the endpoint's page.
func (r *browserRun) webhooksSession(f *browserSession, key string) {
	t, ctx, base := f.t, f.ctx, r.base
	if err := chromedp.Run(ctx, chromedp.Navigate(base), f.signIn(key)); err != nil {
		t.Fatal(err)
	}
	var overflowHooks bool
	rc := newReceiver(t)
	hookURL := rc.srv.URL + "/certorder"
	var secret, createdText string
	err := chromedp.Run(ctx,
		chromedp.Click(`nav.sections a[href="/webhooks"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form.create-webhook`, chromedp.ByQuery),
		f.check("webhooks, none yet"),
		chromedp.SendKeys(`#url`, hookURL, chromedp.ByQuery),
		chromedp.Click(`#event-0`, chromedp.ByQuery), // order.renewed
		chromedp.Click(`#event-1`, chromedp.ByQuery), // order.status_changed
		chromedp.Click(`form.create-webhook button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#new-secret`, chromedp.ByQuery),
		chromedp.Text(`#new-secret`, &secret, chromedp.ByQuery),
		chromedp.Text(`main`, &createdText, chromedp.ByQuery),
		f.check("new webhook endpoint"), f.shot("webhook-created.png"),
	)
	if err != nil {
		t.Fatal(err)
	}
	secret = strings.TrimSpace(secret)
	if !strings.HasPrefix(secret, "whsec_") || !strings.Contains(createdText, hookURL) ||
		!strings.Contains(createdText, "order.renewed, order.status_changed") {
		t.Fatalf("the new endpoint's page (secret of %d characters):\n%s", len(secret), strings.ReplaceAll(createdText, secret, "(secret)"))
	}
	rc.mu.Lock()
	rc.secret = secret
	rc.mu.Unlock()
	var notice, endpointHTML, deliveries string
	err = chromedp.Run(ctx,
		chromedp.Click(`form.actions button[type=submit]`, chromedp.ByQuery), // send a test event
		chromedp.WaitVisible(`table.deliveries`, chromedp.ByQuery),           // the endpoint's page, with the queued event
		chromedp.Text(`p.ok`, &notice, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notice, "test event is queued") {
		t.Errorf("after sending a test event: %q", notice)
	}
	var test *received
	for n := 1; test == nil && n <= 5; n++ { // the test event; nothing else is due, but tolerate the demo's renewals
		got := rc.wait(n)
		if got[n-1].typ == "webhook.test" {
			test = &got[n-1]
		}
	}
	if test == nil || test.data["message"] == nil {
		t.Fatalf("the receiver got no test event: %+v", test)
	}
	// The page shows the delivery once the worker has recorded it: reload until then.
	poll.Within(20*time.Second, func() bool { // checked below
		err = chromedp.Run(ctx, chromedp.Reload(), chromedp.WaitVisible(`table.deliveries`, chromedp.ByQuery),
			chromedp.Text(`table.deliveries`, &deliveries, chromedp.ByQuery))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(deliveries, "Delivered")
	})
	if !strings.Contains(deliveries, "webhook.test") || !strings.Contains(deliveries, "Delivered") || !strings.Contains(deliveries, "204") {
		t.Fatalf("the endpoint's deliveries: %q", deliveries)
	}
	r.hooked.Store(true)
	r.endHooks()
	err = chromedp.Run(ctx,
		f.check("webhook endpoint"), f.shot("webhook.png"),
		chromedp.OuterHTML(`html`, &endpointHTML, chromedp.ByQuery),
		chromedp.Click(`a.delete`, chromedp.ByQuery),
		chromedp.WaitVisible(`form.confirm`, chromedp.ByQuery),
		f.check("webhook delete confirmation"),
		chromedp.Click(`form.confirm a`, chromedp.ByQuery), // cancel
		chromedp.WaitVisible(`table.deliveries`, chromedp.ByQuery),
		chromedp.Click(`nav.sections a[href="/webhooks"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`table.webhooks`, chromedp.ByQuery),
		f.check("webhooks"), f.shot("webhooks.png"),
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(base+"webhooks/1"),
		chromedp.WaitVisible(`table.deliveries`, chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflowHooks),
		f.check("webhook endpoint on a phone"),
		chromedp.EmulateViewport(1280, 900),
	)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(endpointHTML, strings.TrimPrefix(secret, "whsec_")) {
		t.Error("the endpoint's page shows the secret again")
	}
	if overflowHooks {
		t.Error("the endpoint's page scrolls sideways on a phone")
	}
}

// noticesSession: an address added on the page is used only once the link
// e-mailed to it (through the SMTP server, in the language chosen) is
// opened and confirmed.
func (r *browserRun) noticesSession(f *browserSession, key string) {
	t, ctx, base, mail := f.t, f.ctx, r.base, r.mail
	if err := chromedp.Run(ctx, chromedp.Navigate(base), f.signIn(key)); err != nil {
		t.Fatal(err)
	}
	var noticesText, confirmedText string
	err := chromedp.Run(ctx,
		chromedp.Click(`nav.sections a[href="/notices"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form.create-notice`, chromedp.ByQuery),
		f.check("notices, none yet"),
		chromedp.SendKeys(`#address`, "ops@demo.example", chromedp.ByQuery),
		chromedp.Click(`#lang-1`, chromedp.ByQuery), // 日本語
		chromedp.Click(`form.create-notice button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`table.notices`, chromedp.ByQuery),
		chromedp.Text(`main`, &noticesText, chromedp.ByQuery),
		f.check("notices, awaiting confirmation"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(noticesText, "A confirmation link was sent to ops@demo.example") || !strings.Contains(noticesText, "Awaiting confirmation") {
		t.Fatalf("the notices page after adding:\n%s", noticesText)
	}
	confirmation, err := smtptest.Parse(mail.Wait(1, 20*time.Second)[0].Raw)
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`https://certorder\.test(/notices/confirm\?t=\S+)`).FindStringSubmatch(confirmation.Text)
	if confirmation.Subject != "certorder 通知の宛先の確認" || link == nil {
		t.Fatalf("the confirmation: %q\n%s", confirmation.Subject, confirmation.Text)
	}
	err = chromedp.Run(ctx,
		chromedp.Navigate(strings.TrimSuffix(base, "/")+link[1]),
		chromedp.WaitVisible(`form[action="/notices/confirm"]`, chromedp.ByQuery),
		f.check("notice confirmation"), f.shot("notice-confirm.png"),
		chromedp.Click(`form[action="/notices/confirm"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`p.ok`, chromedp.ByQuery),
		chromedp.Text(`p.ok`, &confirmedText, chromedp.ByQuery),
		f.check("notice confirmed"),
		chromedp.Navigate(base+"notices"),
		chromedp.WaitVisible(`table.notices`, chromedp.ByQuery),
		chromedp.Text(`table.notices`, &noticesText, chromedp.ByQuery),
		f.check("notices"), f.shot("notices.png"),
	)
	if err != nil {
		t.Fatal(err)
	}
	// The address is Japanese: its link's page is in its language (issue 45).
	if !strings.Contains(confirmedText, "確認しました。ops@demo.example") || !strings.Contains(noticesText, "Active") || !strings.Contains(noticesText, "日本語") {
		t.Errorf("after confirming: %q\n%s", confirmedText, noticesText)
	}
	// The active address's "Send a test message": sent now, through the
	// SMTP server, and said on the page.
	var testedText string
	err = chromedp.Run(ctx,
		chromedp.Click(`table.notices form[action$="/test"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`p.ok`, chromedp.ByQuery),
		chromedp.Text(`p.ok`, &testedText, chromedp.ByQuery),
		f.check("notices, a test message sent"),
	)
	if err != nil {
		t.Fatal(err)
	}
	tested, err := smtptest.Parse(mail.Wait(2, 20*time.Second)[1].Raw)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(testedText, "A test message was sent to ops@demo.example") || tested.Subject != "certorder からのテストメッセージ（メンバー demo）" {
		t.Errorf("the test message: %q, subject %q", testedText, tested.Subject)
	}
}
