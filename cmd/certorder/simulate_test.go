package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/poll"
)

// startDevSimulator runs "certorder dev simulator" with args (its --addr
// included) through run() until the test ends, and returns its URL (the
// Services API base it prints) and its output.
func startDevSimulator(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"dev", "simulator"}, args...), func(string) string { return "" },
			strings.NewReader(""), out, out)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev simulator: %v\n%s", err, out.String())
		}
	})
	var url string
	poll.Until(t, 30*time.Second, "the simulator's banner", func() bool {
		m := regexp.MustCompile(`on (http://\S+)`).FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	return url, out
}

// A running dev simulator changes its orders when dev simulate asks, as
// CertCentral would, and the next sync stores each change: a revocation,
// a reissue (the same order, a new certificate), a renewal (a new order
// replacing the old), issued at once or later; what the order's state
// does not allow is refused with the reason, and dev simulate never
// talks to anything but a loopback simulator.
func TestDevSimulate(t *testing.T) {
	t.Parallel()
	url, simOut := startDevSimulator(t, "--addr", "127.0.0.1:0")
	c := newStoreCLI(t, filepath.Join(t.TempDir(), "certorder.db"))
	c.env["CERTORDER_DIGICERT_URL"] = url
	c.env["CERTORDER_DIGICERT_API_KEY"] = digicerttest.ExampleKey
	c.env["CERTORDER_DIGICERT_LIMITS"] = "off" // a few dozen requests: within the simulator's limits
	c.ok("admin", "member", "add", "acme-corp")
	c.ok("admin", "member", "link", "acme-corp", "--container", "10001")
	c.sync()
	serial := regexp.MustCompile(`serial ([0-9a-f]+)`)
	// simulate runs dev simulate, which must succeed, checks its two
	// lines and returns them.
	simulate := func(want string, args ...string) string {
		t.Helper()
		out := c.ok(append([]string{"dev", "simulate"}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], want) ||
			lines[1] != "webhook: no event (the account has no webhook); the next certorder sync finds the change" &&
				!strings.HasPrefix(lines[1], "webhook: no event (CertCentral sends none for") {
			t.Fatalf("dev simulate %s: want %q and the webhook's line, got:\n%s", strings.Join(args, " "), want, out)
		}
		return lines[0]
	}
	// syncs runs a sync whose summary must have each of want. (An
	// incremental run fetches again what changed in the last minutes:
	// its window starts before the cursor, for clock skew.)
	syncs := func(want ...string) {
		t.Helper()
		summary, _ := c.sync()
		for _, w := range want {
			if !strings.Contains(summary, w) {
				t.Errorf("the sync after the change: no %q in %s", w, summary)
			}
		}
	}

	// A revocation.
	simulate("order 100006: revoked, certificate 500006", "revoke", "100006")
	syncs("incremental", "fetched 1 (revoked 1)", "changed 1,")
	if out := c.ok("admin", "order", "show", "100006", "--summary"); !strings.Contains(out, "revoked") {
		t.Errorf("100006 after the sync:\n%s", out)
	}

	// A reissue: the same order, a new certificate, issued at once; the
	// flag may come first.
	line := simulate("order 100002: reissued, new certificate 500010 (serial ", "reissue", "--simulator", url, "100002")
	newSerial := serial.FindStringSubmatch(line)[1]
	syncs("changed 1,", "reissues 1,")
	if out := c.ok("admin", "order", "show", "100002"); !strings.Contains(out, newSerial) {
		t.Errorf("100002 after the sync has not the new serial %s:\n%s", newSerial, out)
	}

	// A renewal, pending, then issued: a new order that replaces 100008
	// (Acme's wildcard in Initech's division).
	simulate("order 100008: renewed by order 100010, pending (dev simulate issue 100010 issues it)", "renew", "100008", "--pending")
	syncs("new 1,", "renewals linked 1,")
	if out := c.ok("admin", "order", "show", "100008"); !strings.Contains(out, `"was_renewed_by_order_id": 100010`) {
		t.Errorf("100008 after the sync is not renewed by 100010:\n%s", out)
	}
	if out := c.ok("admin", "order", "show", "100010", "--summary"); !strings.Contains(out, "pending") {
		t.Errorf("the renewal after the sync:\n%s", out)
	}
	simulate("order 100010: issued, certificate 500011 (serial ", "issue", "100010")
	syncs("changed 1,")

	// A pending reissue, then issued.
	simulate("order 100010: reissue pending, new certificate 500012 (dev simulate issue 100010 issues it)", "reissue", "100010", "--pending")
	simulate("order 100010: issued, certificate 500012 (serial ", "issue", "100010")
	syncs("reissues 1,")

	// The simulator told of every change in its own output.
	for _, want := range []string{"order 100006: revoked", "order 100002: reissued", "order 100008: renewed by order 100010", "order 100010: issued"} {
		if !strings.Contains(simOut.String(), want) {
			t.Errorf("the simulator's output lacks %q:\n%s", want, simOut.String())
		}
	}

	// Refusals, with the reason; nothing changed by them.
	for _, r := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"revoke", "100006"}, exitFailure, "order 100006 is revoked: only an issued certificate is revoked"},
		{[]string{"issue", "100004"}, exitFailure, "order 100004 is issued: only a pending order"},
		{[]string{"reissue", "100001"}, exitFailure, "plan ended on"},
		{[]string{"renew", "100001"}, exitFailure, "order 100001 is already renewed by 100006"},
		{[]string{"renew", "100005"}, exitFailure, "order 100005 is canceled"},
		{[]string{"issue", "999"}, exitFailure, "no order 999"},
		{[]string{"cancel", "100006"}, exitUsage, `"cancel" is not a change: want one of issue, revoke, reissue, renew`},
		{[]string{"revoke", "x1"}, exitUsage, `ORDER "x1" is not an order number`},
		{[]string{"revoke"}, exitUsage, "want 2 argument(s), got 1"},
		{[]string{"revoke", "100004", "--pending"}, exitUsage, "--pending is for reissue and renew only"},
		{[]string{"revoke", "100004", "--simulator", "https://www.digicert.com/services/v2/"}, exitUsage, "is not on loopback"},
		{[]string{"revoke", "100004", "--simulator", "ftp://127.0.0.1/"}, exitUsage, "is not an http:// URL"},
		{[]string{"revoke", "100004", "--simulator", "http://127.0.0.1:1/"}, exitFailure, "no simulator answered at http://127.0.0.1:1 (--simulator; is certorder dev simulator running there?)"},
	} {
		if out := c.fails(r.code, append([]string{"dev", "simulate"}, r.args...)...); !strings.Contains(out, r.want) {
			t.Errorf("dev simulate %s: want %q in\n%s", strings.Join(r.args, " "), r.want, out)
		}
	}
	// CertCentral's URL in the environment is never asked.
	c.env["CERTORDER_DIGICERT_URL"] = "https://www.digicert.com/services/v2/"
	if out := c.fails(exitUsage, "dev", "simulate", "revoke", "100004"); !strings.Contains(out, "CERTORDER_DIGICERT_URL https://www.digicert.com/services/v2/ is not on loopback") {
		t.Errorf("with CertCentral's URL in the environment: %s", out)
	}
	c.env["CERTORDER_DIGICERT_URL"] = url
	syncs("changed 0,", "new 0,", "reissues 0,")
}
