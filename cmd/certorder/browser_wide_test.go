package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/smtptest"
	"github.com/certorder/certorder/internal/testdb"
)

// tableProblems measures every table of the page as laid out: a table
// wider than its container (clipped, or scrolled out of sight), a cell
// whose content is wider than the cell, and a word (a status, a number,
// a date's parts, a button's label: a run of up to 24 ASCII characters
// between spaces; longer runs are serials, thumbprints, URLs and a
// receiver's JSON, which may break, and Japanese text breaks between its
// characters by its own rules) broken over two lines.
const tableProblems = `(() => {
  const problems = [];
  const lines = range => new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top))).size;
  document.querySelectorAll("main table").forEach((table, i) => {
    const name = "table." + (table.className || i);
    const box = table.getBoundingClientRect(), container = table.parentElement;
    const main = document.querySelector("main").getBoundingClientRect();
    if (box.width > container.clientWidth + 1 || box.right > main.right + 1) {
      problems.push(name + ": " + Math.round(box.width) + " px wide in a container of " + container.clientWidth + " px");
    }
    table.querySelectorAll("th, td").forEach(cell => {
      const label = name + " " + (cell.dataset.label || cell.textContent.trim().slice(0, 24));
      if (cell.scrollWidth > cell.clientWidth + 1) {
        problems.push(label + ": content " + cell.scrollWidth + " px in a cell of " + cell.clientWidth + " px");
      }
      const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        if (n.parentElement.closest(".visually-hidden, details:not([open]) > :not(summary)")) continue; // not shown
        const word = /[^\s]+/g;
        for (let m; (m = word.exec(n.data)); ) {
          if (m[0].length > 24 || !/^[\x21-\x7e]+$/.test(m[0])) continue;
          const r = document.createRange();
          r.setStart(n, m.index);
          r.setEnd(n, m.index + m[0].length);
          if (lines(r) > 1) problems.push(label + ": " + JSON.stringify(m[0]) + " broken mid-word");
        }
      }
    });
  });
  return problems;
})()`

// The member pages at 1280 px, in English and Japanese: every page with a
// table (orders, an order's certificate history, keys, webhooks, an
// endpoint's deliveries with a delivered answer and a failure's long
// error, notices) has no table wider than its container, no clipped cell
// and no word broken mid-word (the history's Status wrapped mid-word, the
// deliveries' last column was clipped). Screenshots go to
// $CERTORDER_ARTIFACTS.
func TestBrowserWide(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a real browser: not with -short")
	}
	t.Parallel()
	exe := chromium(t)
	out := artifacts(t)
	c := newStoreCLI(t, testdb.SQLite(t))
	c.ok("admin", "member", "add", "demo")
	if _, errOut, err := c.run(timelineOrders(time.Now()), "admin", "order", "import", "--member", "demo", "-"); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	// A receiver that answers the first message 200 with a body, then 500
	// with a long error, as real ones do.
	var mu sync.Mutex
	n := 0
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"accepted","queue":"certificates-renewal-notifications","id":"evt_01JDZ8Q4M7"}`)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "upstream handler failed: NotificationRouterException: no route configured for event type webhook.test in workspace production-eu-west-1")
	}))
	t.Cleanup(rc.Close)
	c.ok("admin", "webhook", "add", "demo", rc.URL+"/hooks/certorder/"+strings.Repeat("a1b2c3d4", 6)+"?source=certorder&workspace=production", "--allow-private")
	c.ok("admin", "notice", "add", "demo", "certificate-operations-team@very-long-subdomain.acme-corporation.example", "--lang", "ja")
	mail := smtptest.Start(t, false)
	endpoint, stdout := startServe(t, c, append([]string{"--demo", "--webhook-allow-private"}, smtpArgs(t, mail)...)...)
	base := strings.TrimSuffix(endpoint, "api/digicert/")
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browserOptions(t, exe)...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 150*time.Second)
	defer cancelTimeout()

	// Sign in; two test events: one delivered with an answer, one failed.
	err := chromedp.Run(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(base),
		chromedp.WaitVisible(`#name`, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "demo", chromedp.ByQuery),
		chromedp.SendKeys(`#key`, key, chromedp.ByQuery),
		chromedp.Click(`form[action="/signin"] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`table.orders`, chromedp.ByQuery),
		chromedp.Navigate(base+"webhooks/1"),
		chromedp.WaitVisible(`form[action="/webhooks/1/test"] button`, chromedp.ByQuery),
		chromedp.Click(`form[action="/webhooks/1/test"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`p.ok`, chromedp.ByQuery), // "A test event is queued": the POST's answer
	)
	if err != nil {
		t.Fatal(err)
	}
	var deliveries string
	waitFor := func(state string, count int) {
		t.Helper()
		ok := poll.Within(20*time.Second, func() bool {
			if err := chromedp.Run(ctx, chromedp.Navigate(base+"webhooks/1"), chromedp.WaitVisible(`table.deliveries`, chromedp.ByQuery),
				chromedp.Text(`table.deliveries`, &deliveries, chromedp.ByQuery)); err != nil {
				t.Fatal(err)
			}
			return strings.Count(deliveries, state) >= count
		})
		if !ok {
			t.Fatalf("no %q delivery in time:\n%s", state, deliveries)
		}
	}
	waitFor("Delivered", 1)
	if !strings.Contains(deliveries, "200") || !strings.Contains(deliveries, `"status":"accepted"`) {
		t.Errorf("the delivered test event shows no status and answer:\n%s", deliveries)
	}
	if err := chromedp.Run(ctx, chromedp.Click(`form[action="/webhooks/1/test"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`p.ok`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	waitFor("Retrying", 1)

	pages := []string{"orders", "orders?renewed=1", "orders/10003", "orders/10001", "keys", "webhooks", "webhooks/1", "notices"}
	measured := 0
	for _, lang := range []string{"en", "ja"} {
		if err := chromedp.Run(ctx, chromedp.Navigate(base+"lang?l="+lang+"&next=/orders"), chromedp.WaitVisible(`table.orders`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		for _, page := range pages {
			var problems []string
			var tables, width int
			var png []byte
			err := chromedp.Run(ctx,
				chromedp.Navigate(base+page),
				chromedp.WaitVisible(`main table`, chromedp.ByQuery),
				chromedp.Evaluate(`document.querySelectorAll("main table").length`, &tables),
				chromedp.Evaluate(`window.innerWidth`, &width),
				chromedp.Evaluate(tableProblems, &problems),
			)
			name := fmt.Sprintf("wide-%s-%s.png", lang, regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(page, "-"))
			if err == nil && out != "" {
				if err = chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err == nil {
					err = os.WriteFile(filepath.Join(out, name), png, 0o644)
				}
			}
			if err != nil {
				t.Fatalf("%s %s: %v", lang, page, err)
			}
			if width != 1280 || tables == 0 {
				t.Fatalf("%s %s: %d tables at %d px", lang, page, tables, width)
			}
			measured += tables
			if len(problems) > 0 {
				b, _ := json.MarshalIndent(problems, "", "  ")
				t.Errorf("%s /%s at 1280 px (%s):\n%s", lang, page, name, b)
			}
		}
	}
	t.Logf("%d tables measured at 1280 px; screenshots in %q (none without CERTORDER_ARTIFACTS)", measured, out)
}
