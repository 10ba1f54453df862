package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/certorder/certorder/internal/testdb"
)

// chromium finds Debian's Chromium, or skips the test (fails under CI=true).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but Chromium is not installed: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("browser test skipped: install Chromium to run it (Debian: apt-get install chromium)")
	return ""
}

// artifacts is where screenshots go: $CERTORDER_ARTIFACTS, or a temp dir.
func artifacts(t *testing.T) string {
	dir := os.Getenv("CERTORDER_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A member signs in, opens the orders page, follows a renewal link to the
// current order and signs out, in headless Chromium.
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	out := artifacts(t)
	c := newCLI(t, testdb.SQLite(t))
	endpoint, stdout := startServe(t, c, "--demo")
	base := strings.TrimSuffix(endpoint, "api/digicert/")
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(out, name), png, 0o644)
		})
	}
	var heading, location, chain string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(`#name`, chromedp.ByQuery),
		shot("signin.png"),
		chromedp.SendKeys(`#name`, "demo", chromedp.ByQuery),
		chromedp.SendKeys(`#key`, key, chromedp.ByQuery),
		chromedp.Click(`form[action="/signin"] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`table`, chromedp.ByQuery),
		shot("orders.png"),
		// The renewal link of order 10001 leads to 10002, whose page links the current order.
		chromedp.Click(`a[href="/orders/10001"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`ol.chain`, chromedp.ByQuery),
		chromedp.Text(`ol.chain`, &chain, chromedp.ByQuery),
		chromedp.Click(`ol.chain a[href="/orders/10003"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`h1 .current`, chromedp.ByQuery),
		chromedp.Text(`h1`, &heading, chromedp.ByQuery),
		chromedp.Click(`details summary`, chromedp.ByQuery),
		shot("order.png"),
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(base+"orders"),
		chromedp.WaitVisible(`table`, chromedp.ByQuery),
		shot("orders-phone.png"),
		chromedp.EmulateViewport(1280, 900),
		chromedp.Click(`form[action="/signout"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#name`, chromedp.ByQuery),
		chromedp.Location(&location),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(chain, "Order 10001 (this order)") || !strings.Contains(chain, "Order 10003 — current") {
		t.Errorf("renewal chain on order 10001: %q", chain)
	}
	if !strings.Contains(heading, "Order 10003") || !strings.Contains(heading, "current") {
		t.Errorf("the current order's heading: %q", heading)
	}
	if !strings.HasSuffix(location, "/signin") {
		t.Errorf("after sign-out the browser is at %s", location)
	}
	// Signed out, the orders page is out of reach.
	err = chromedp.Run(ctx, chromedp.Navigate(base+"orders"), chromedp.WaitVisible(`#name`, chromedp.ByQuery), chromedp.Location(&location))
	if err != nil || !strings.HasSuffix(location, "/signin") {
		t.Errorf("orders after sign-out: %s %v", location, err)
	}
	for _, name := range []string{"signin.png", "orders.png", "order.png", "orders-phone.png"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() < 1000 {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
	t.Logf("screenshots in %s", out)
}
