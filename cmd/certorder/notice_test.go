package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/smtptest"
	"github.com/certorder/certorder/internal/testdb"
)

// passwordFile writes the test SMTP server's password to a file of the
// test's, readable by its owner only.
func passwordFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "smtp-password")
	if err := os.WriteFile(p, []byte(smtptest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// smtpArgs are serve's flags for the test SMTP server.
func smtpArgs(t *testing.T, s *smtptest.Server) []string {
	return []string{"--smtp-addr", s.Addr, "--smtp-user", smtptest.User, "--smtp-password-file", passwordFile(t),
		"--smtp-ca-file", s.CAFile, "--mail-from", "certorder <noreply@certorder.test>", "--public-url", "https://certorder.test"}
}

// renewals imports orders and records each pair's renewal: one
// order.renewed event each.
func renewals(t *testing.T, c *cli, member string, pairs ...[2]int) {
	t.Helper()
	var docs []string
	for _, p := range pairs {
		docs = append(docs, strings.TrimSpace(orderJSON(p[0])), strings.TrimSpace(orderJSON(p[1])))
	}
	if _, errOut, err := c.run("["+strings.Join(docs, ",")+"]", "admin", "order", "import", "--member", member, "-"); err != nil {
		t.Fatalf("import: %v %s", err, errOut)
	}
	for _, p := range pairs {
		c.ok("admin", "order", "renew", strconv.Itoa(p[0]), strconv.Itoa(p[1]))
	}
}

// The operator's commands and serve: an address added with admin notice
// add is active at once and gets its notice through the SMTP server; the
// message's one-click unsubscribe link stops the next ones; a Slack-format
// endpoint gets the readable line; serve refuses SMTP settings that cannot
// work or are unsafe, and never logs the password.
func TestNoticesServe(t *testing.T) {
	t.Parallel()
	c := newStoreCLI(t, testdb.SQLite(t))
	mail := smtptest.Start(t, false)
	c.ok("admin", "member", "add", "acme")
	out := c.ok("admin", "notice", "add", "acme", "Ops@Acme.Example", "--lang", "ja", "--events", "order.renewed,order.plan_ending")
	if !strings.Contains(out, "address 1 added for member acme: ops@acme.example, in ja, order.renewed, order.plan_ending; active now") {
		t.Fatalf("notice add: %s", out)
	}
	c.ok("admin", "notice", "add", "acme", "all@acme.example")
	for _, bad := range [][]string{
		{"admin", "notice", "add", "acme", "not-an-address"},
		{"admin", "notice", "add", "acme", "x@acme.example", "--lang", "fr"},
		{"admin", "notice", "add", "acme", "x@acme.example", "--events", "order.nope"},
		{"admin", "notice", "remove", "abc"},
		{"admin", "webhook", "add", "acme", "https://hooks.example/x", "--format", "teams"},
	} {
		c.fails(exitUsage, bad...)
	}
	if msg := c.fails(1, "admin", "notice", "add", "acme", "ops@acme.example"); !strings.Contains(msg, "has the address ops@acme.example already") {
		t.Errorf("twice: %s", msg)
	}
	c.fails(1, "admin", "notice", "add", "nobody", "x@acme.example")
	list := c.ok("admin", "notice", "list", "acme")
	if !regexp.MustCompile(`(?m)^1\s+ops@acme.example\s+ja\s+order.renewed, order.plan_ending\s+active\s+-\s+-$`).MatchString(list) {
		t.Errorf("notice list:\n%s", list)
	}

	// A chat room.
	var mu sync.Mutex
	var lines []string
	chat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		lines = append(lines, m.Text)
		mu.Unlock()
	}))
	defer chat.Close()
	if out := c.ok("admin", "webhook", "add", "acme", chat.URL+"/slack", "--format", "slack", "--allow-private"); !strings.Contains(out, "slack format") {
		t.Errorf("webhook add --format slack: %s", out)
	}
	if !strings.Contains(c.ok("admin", "webhook", "list", "acme"), " slack ") {
		t.Error("webhook list does not say the format")
	}

	// serve's refusals.
	pw := passwordFile(t)
	for _, args := range [][]string{
		{"--smtp-addr", mail.Addr, "--mail-from", "noreply@certorder.test"}, // no --public-url
		{"--smtp-addr", "smtp.example.com:25", "--smtp-tls", "none", "--mail-from", "noreply@certorder.test", "--public-url", "https://certorder.test"},
		{"--smtp-addr", mail.Addr, "--smtp-user", "u", "--smtp-password-file", pw + ".missing", "--mail-from", "noreply@certorder.test", "--public-url", "https://certorder.test"},
		{"--smtp-addr", mail.Addr, "--mail-from", "nobody", "--public-url", "https://certorder.test"},
		{"--public-url", "http://certorder.test"},
		{"--smtp-addr", mail.Addr, "--mail-from", "noreply@certorder.test", "--public-url", "https://certorder.test", "--web=false"},
	} {
		msg := c.fails(exitUsage, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
		if strings.Contains(msg, smtptest.Password) {
			t.Errorf("the password in an error: %s", msg)
		}
	}

	stderr := &syncBuffer{}
	metricsAddr := freeAddr(t)
	endpoint, _ := startServeWith(t, c, stderr, append(smtpArgs(t, mail), "--webhook-allow-private", "--metrics-addr", metricsAddr)...)
	base := strings.TrimSuffix(endpoint, "/api/digicert/")
	renewals(t, c, "acme", [2]int{101, 102})
	ms := mail.Wait(2, 20*time.Second)
	var ja smtptest.Read
	for _, m := range ms {
		if m.To[0] == "ops@acme.example" {
			var err error
			if ja, err = smtptest.Parse(m.Raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !strings.HasPrefix(ja.Subject, "注文 101 (") || !strings.Contains(ja.Subject, "注文 102 に更新されました") ||
		!strings.Contains(ja.Text, "https://certorder.test/orders/101") || !strings.Contains(ja.HTML, "https://certorder.test/orders/101") {
		t.Fatalf("the Japanese notice: %q\n%s", ja.Subject, ja.Text)
	}
	poll.Until(t, 20*time.Second, "the chat room gets its line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lines) == 1
	})
	if !strings.HasPrefix(lines[0], "Order 101 (") || !strings.HasSuffix(lines[0], "was renewed as order 102. Follow order 102 from now on. https://certorder.test/orders/101") {
		t.Errorf("the chat line: %q", lines[0])
	}

	// One click: the mail client POSTs to the List-Unsubscribe link.
	link := strings.Trim(ja.Header.Get("List-Unsubscribe"), "<>")
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "https" || ja.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("List-Unsubscribe %q (%v)", link, err)
	}
	resp, err := http.Post(base+u.RequestURI(), "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("one-click unsubscribe: %d", resp.StatusCode)
	}
	if list := c.ok("admin", "notice", "list", "acme"); !regexp.MustCompile(`(?m)^1\s+ops@acme.example\s.*unsubscribed `).MatchString(list) {
		t.Errorf("after unsubscribing:\n%s", list)
	}
	renewals(t, c, "acme", [2]int{103, 104})
	mail.Wait(3, 20*time.Second)
	awaitRounds(t, metricsAddr, "notices") // nothing more may come
	ms = mail.Messages()
	if len(ms) != 3 || ms[2].To[0] != "all@acme.example" {
		t.Errorf("after unsubscribing, %d messages; the last to %v", len(ms), ms[len(ms)-1].To)
	}
	c.ok("admin", "notice", "remove", "1")
	if list := c.ok("admin", "notice", "list", "acme"); strings.Contains(list, "ops@acme.example") {
		t.Errorf("removed, still listed:\n%s", list)
	}
	if log := stderr.String(); strings.Contains(log, smtptest.Password) || !strings.Contains(log, "sending notices") {
		t.Errorf("serve's log:\n%s", log)
	}
}

// Two serve processes on one PostgreSQL store, one SMTP server: every
// notice is sent once, never twice, whichever instance takes it.
func TestNoticesTwoInstances(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	c := newStoreCLI(t, dsn)
	mail := smtptest.Start(t, false)
	bin := buildBinary(t)
	c.ok("admin", "member", "add", "acme")
	for i := range 5 {
		c.ok("admin", "notice", "add", "acme", "ops"+strconv.Itoa(i)+"@acme.example")
	}
	var ps []*process
	var metrics []string
	for range 2 {
		addr := freeAddr(t)
		ps = append(ps, startProcess(t, bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dsn, "--metrics-addr", addr},
			smtpArgs(t, mail)...)...))
		metrics = append(metrics, addr)
	}
	var pairs [][2]int
	for i := range 8 {
		pairs = append(pairs, [2]int{200 + 2*i, 201 + 2*i})
	}
	renewals(t, c, "acme", pairs...)
	const want = 5 * 8 // each renewal to each address: within the day's ten
	mail.Wait(want, 30*time.Second)
	for _, addr := range metrics { // both workers go round again: nothing more may come
		awaitRounds(t, addr, "notices")
	}
	ms := mail.Messages()
	ids := map[string]bool{}
	perAddress := map[string]map[string]bool{}
	for _, m := range ms {
		r, err := smtptest.Parse(m.Raw)
		if err != nil {
			t.Fatal(err)
		}
		id := r.Header.Get("Message-ID")
		if ids[id] {
			t.Errorf("sent twice: %s", id)
		}
		ids[id] = true
		if perAddress[m.To[0]] == nil {
			perAddress[m.To[0]] = map[string]bool{}
		}
		perAddress[m.To[0]][r.Subject] = true
	}
	if len(ms) != want || len(perAddress) != 5 {
		t.Fatalf("%d messages to %d addresses, want %d to 5", len(ms), len(perAddress), want)
	}
	for addr, subjects := range perAddress {
		if len(subjects) != 8 {
			t.Errorf("%s got %d distinct notices, want 8", addr, len(subjects))
		}
	}
	for _, p := range ps {
		if strings.Contains(p.log.String(), smtptest.Password) {
			t.Errorf("the password in the log:\n%s", p.log.String())
		}
	}
}
