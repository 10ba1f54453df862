package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/storetest"
)

// cli runs the program with a temp database in CERTORDER_DB.
type cli struct {
	t   *testing.T
	env map[string]string
}

func newCLI(t *testing.T, dsn string) *cli {
	return &cli{t: t, env: map[string]string{"CERTORDER_DB": dsn}}
}

// newStoreCLI is newCLI on a new, empty store (admin commands refuse a
// store that does not exist).
func newStoreCLI(t *testing.T, dsn string) *cli {
	c := newCLI(t, dsn)
	// A new SQLite store is a copy of the one admin migrate makes
	// (testdb.NewSQLite); migrate then finds nothing to do.
	testdb.NewSQLite(t, dsn, func(path string) error {
		_, errOut, err := newCLI(t, path).run("", "admin", "migrate")
		if err != nil {
			return fmt.Errorf("%v: %s", err, errOut)
		}
		return nil
	})
	c.ok("admin", "migrate")
	return c
}

// run runs certorder with args and stdin; it returns stdout, stderr and the error.
func (c *cli) run(stdin string, args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return c.env[k] },
		strings.NewReader(stdin), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// ok runs a command that must succeed and returns its stdout.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run("", args...)
	if err != nil {
		c.t.Fatalf("certorder %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// fails runs a command that must fail with the given exit code.
func (c *cli) fails(code int, args ...string) string {
	c.t.Helper()
	_, errOut, err := c.run("", args...)
	if err == nil || exitCode(err) != code {
		c.t.Fatalf("certorder %s: err %v (exit %d), want exit %d", strings.Join(args, " "), err, exitCode(err), code)
	}
	return err.Error() + errOut
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	testdb.Each(t, testAdminCommands)
}

func testAdminCommands(t *testing.T, dsn string) {
	c := newCLI(t, dsn)
	// No store yet: only migrate makes one (TestMistypedDB has the rest).
	if msg := c.fails(exitUsage, "admin", "member", "add", "alice"); !strings.Contains(msg, "certorder admin migrate --db") {
		t.Fatalf("member add on no store: %s", msg)
	}
	// A new store is said to be new, with the next step.
	if out := c.ok("admin", "migrate"); !strings.Contains(out, "created a new, empty certorder store at") ||
		!strings.Contains(out, "no members yet. Next: certorder admin member add NAME") {
		t.Fatalf("migrate on no store:\n%s", out)
	}
	if out := c.ok("admin", "migrate"); strings.Contains(out, "created") {
		t.Fatalf("migrate on a store:\n%s", out)
	}
	c.ok("admin", "member", "add", "alice")
	if out := c.ok("admin", "migrate"); out != "schema is up to date\n" {
		t.Fatalf("migrate on a store with members:\n%s", out)
	}
	c.ok("admin", "member", "add", "bob")
	if msg := c.fails(exitFailure, "admin", "member", "add", "alice"); !strings.Contains(msg, "member alice already exists") {
		t.Fatalf("member add twice: %s", msg)
	}
	c.fails(exitUsage, "admin", "member", "add", "not valid") // a usage error, as every invalid argument
	c.ok("admin", "member", "disable", "bob")
	if out := c.ok("admin", "member", "list"); !regexp.MustCompile(`alice\s+enabled`).MatchString(out) ||
		!regexp.MustCompile(`bob\s+disabled`).MatchString(out) {
		t.Fatalf("member list:\n%s", out)
	}
	c.fails(exitFailure, "admin", "member", "disable", "nobody")

	// key create: the key alone on the last line; flags after the name work.
	out := c.ok("admin", "key", "create", "alice", "--label", "cron job")
	key := lastLine(out)
	if !regexp.MustCompile(`^cok_[0-9a-f]{12}_[a-z2-7]{39}$`).MatchString(key) {
		t.Fatalf("key create printed %q", out)
	}
	list := c.ok("admin", "key", "list", "alice")
	id := key[4:16]
	if !strings.Contains(list, id) || !strings.Contains(list, "cron job") || strings.Contains(list, key[17:]) {
		t.Fatalf("key list:\n%s", list)
	}
	c.fails(exitFailure, "admin", "key", "create", "nobody")

	// order import from a file and from stdin.
	file := filepath.Join(t.TempDir(), "orders.json")
	if err := os.WriteFile(file, []byte("["+storetest.OrderJSON(1, 0, "2020-01-01")+","+
		storetest.OrderJSON(2, 0, "2099-01-01")+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("admin", "order", "import", "--member", "alice", file); !strings.Contains(out, "imported 2 order(s)") {
		t.Fatalf("import: %s", out)
	}
	out, errOut, err := c.run(storetest.OrderJSON(3, 0, "2099-06-01"), "admin", "order", "import", "-", "--member", "alice")
	if err != nil || !strings.Contains(out, "imported 1 order(s)") {
		t.Fatalf("import from stdin: %v %s %s", err, out, errOut)
	}
	// A file with one bad order imports nothing.
	_, _, err = c.run("["+storetest.OrderJSON(4, 0, "2099-01-01")+`,{"OrderId":5}]`, "admin", "order", "import", "--member", "alice", "-")
	if err == nil || !strings.Contains(err.Error(), "order 2") {
		t.Fatalf("bad import: %v", err)
	}
	c.fails(exitUsage, "admin", "order", "import", file)

	c.ok("admin", "order", "renew", "1", "2")
	c.ok("admin", "order", "renew", "2", "3")
	if msg := c.fails(exitFailure, "admin", "order", "renew", "3", "1"); !strings.Contains(msg, "cycle") {
		t.Fatalf("cycle: %s", msg)
	}
	c.fails(exitUsage, "admin", "order", "renew", "1", "x")

	list = c.ok("admin", "order", "list", "alice")
	for _, re := range []string{`(?m)^1\s+host1.example.com\s+issued\s+2020-01-01\s+-\d+\s+-\s+2\s+renewed as 2$`, `(?m)^2\s.*\s3\s+renewed as 3$`, `(?m)^3\s.*\s-\s+none \(order_valid_till is not stated\)$`} {
		if !regexp.MustCompile(re).MatchString(list) {
			t.Fatalf("order list does not match %s:\n%s", re, list)
		}
	}
	if strings.Contains(list, "host4") {
		t.Fatal("the failed import left order 4 behind")
	}
	if renewed := c.ok("admin", "order", "list", "alice", "--next-step", "renewed"); !regexp.MustCompile(`(?m)^1\s`).MatchString(renewed) ||
		!regexp.MustCompile(`(?m)^2\s`).MatchString(renewed) || regexp.MustCompile(`(?m)^3\s`).MatchString(renewed) {
		t.Errorf("order list --next-step renewed:\n%s", renewed)
	}
	if msg := c.fails(exitUsage, "admin", "order", "list", "alice", "--next-step", "soon"); !strings.Contains(msg, "reissue, renew, issue_renewal, renewed, ended, none") {
		t.Errorf("an unknown step: %s", msg)
	}
	// order show prints the OrderInfo answer alone, for jq.
	show := c.ok("admin", "order", "show", "1")
	var answer map[string]any
	if err := json.Unmarshal([]byte(show), &answer); err != nil || answer["was_renewed_by_order_id"] != 2.0 {
		t.Fatalf("order show is not the OrderInfo answer alone (%v):\n%s", err, show)
	}
	summary := c.ok("admin", "order", "show", "1", "--summary")
	for _, re := range []string{`Member:\s+alice`, `Order:\s+1\n`, `Renewal:\s+renewed by order 2`} {
		if !regexp.MustCompile(re).MatchString(summary) {
			t.Errorf("order show --summary lacks %s:\n%s", re, summary)
		}
	}
	if msg := c.fails(exitFailure, "admin", "order", "show", "99"); !strings.Contains(msg, "no order 99") {
		t.Fatalf("order show 99: %s", msg)
	}

	// key revoke takes the whole key too, and never repeats its secret.
	out, errOut, err = c.run("", "admin", "key", "revoke", key)
	if err != nil || !strings.HasPrefix(out, "key "+id+" revoked\n") || strings.Contains(out+errOut, key[17:]) {
		t.Fatalf("key revoke with the whole key: %v %q %q", err, out, errOut)
	}
	if list := c.ok("admin", "key", "list", "alice"); !strings.Contains(list, "revoked") {
		t.Fatalf("key list after revoke:\n%s", list)
	}
	c.ok("admin", "key", "revoke", id) // again, by ID: already revoked is fine
	for _, bad := range []string{"cok_xyz_" + key[17:], key[17:]} {
		if msg := c.fails(exitUsage, "admin", "key", "revoke", bad); strings.Contains(msg, key[17:25]) {
			t.Errorf("key revoke %q repeats the secret: %s", bad, msg)
		}
	}
	if msg := c.fails(exitFailure, "admin", "key", "revoke", "0123456789ab"); !strings.Contains(msg, "no key with ID 0123456789ab") {
		t.Errorf("key revoke of a missing key: %s", msg)
	}

	// audit: what is wrong with an argument is said, with what would do.
	if msg := c.fails(exitUsage, "admin", "audit", "--limit", "-1"); !strings.Contains(msg, "--limit -1") {
		t.Errorf("audit --limit -1: %s", msg)
	}
	if msg := c.fails(exitUsage, "admin", "audit", "--since", "yesterday"); !strings.Contains(msg, `"yesterday" is not a time`) ||
		!strings.Contains(msg, "RFC 3339") || !strings.Contains(msg, "24h") {
		t.Errorf("audit --since yesterday: %s", msg)
	}
	c.ok("admin", "audit", "--since", "2026-01-02", "--limit", "0")
	c.fails(exitUsage, "admin", "nothing", "here")
	c.fails(exitUsage, "admin", "member")
	c.fails(exitUsage, "frobnicate")
	c.fails(exitUsage, "admin", "member", "add")
}

// syncBuffer is written by the server goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs "certorder serve" with args on a free port until the test
// ends, and returns its endpoint and stdout.
func startServe(t *testing.T, c *cli, args ...string) (endpoint string, stdout *syncBuffer) {
	t.Helper()
	return startServeWith(t, c, &syncBuffer{}, args...)
}

// startServeWith is startServe with the log going to stderr.
func startServeWith(t *testing.T, c *cli, stderr *syncBuffer, args ...string) (endpoint string, stdout *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout = &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...),
			func(k string) string { return c.env[k] }, strings.NewReader(""), stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, stderr.String())
		}
	})
	re := regexp.MustCompile(`listening on (\S+)`)
	var m []string
	if !poll.Within(30*time.Second, func() bool {
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v\n%s", err, stderr.String())
		default:
		}
		m = re.FindStringSubmatch(stderr.String())
		return m != nil
	}) {
		t.Fatalf("serve did not start:\n%s", stderr.String())
	}
	return m[1], stdout
}

// The demo prints credentials and a curl command for each action (the
// CertificateCheck with a demo certificate's serial) that work, every
// time it runs.
func TestServeDemo(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	for run := 0; run < 2; run++ {
		endpoint, stdout := startServe(t, c, "--demo")
		out := stdout.String()
		curls := regexp.MustCompile(`curl -s -X POST (\S+) -H 'Content-Type: application/json' -d '([^']+)'`).FindAllStringSubmatch(out, -1)
		actions := []string{"Auth", "OrderInfo", "RenewCheck", "CertificateCheck"}
		if len(curls) != len(actions) {
			t.Fatalf("want %d curl commands, one for each action:\n%s", len(actions), out)
		}
		for i, want := range []string{`{"message":"Authenticated"}`, `"OrderId":10003`, `{"orderId":10001,"renewed_orderId":10002}`,
			`{"orderId":10003,"certificate_id":530003,"is_current":true}`} {
			if !strings.Contains(curls[i][2], `"action":"`+actions[i]+`"`) {
				t.Errorf("curl %d is not %s: %s", i+1, actions[i], curls[i][2])
			}
			if curls[i][1] != endpoint {
				t.Errorf("curl address %s, want %s", curls[i][1], endpoint)
			}
			resp, err := http.Post(curls[i][1], "application/json", strings.NewReader(curls[i][2]))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(b.String(), want) {
				t.Errorf("run %d, %s: %d %s", run, curls[i][2], resp.StatusCode, b.String())
			}
		}
	}
	// Each run revoked the demo key before it: exactly one is active.
	if list := c.ok("admin", "key", "list", "demo"); strings.Count(list, "active") != 1 {
		t.Fatalf("demo keys:\n%s", list)
	}
}

func TestServeFlags(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	c.fails(exitUsage, "serve", "--ca-segment", "a/b")
	c.fails(exitUsage, "serve", "extra")
	c.fails(exitUsage, "serve", "--no-such-flag")
	c.env["CERTORDER_CA_SEGMENT"] = "sectigo"
	endpoint, _ := startServe(t, c)
	if !strings.HasSuffix(endpoint, "/api/sectigo/") {
		t.Fatalf("endpoint %s ignores CERTORDER_CA_SEGMENT", endpoint)
	}
}

// A command's error is printed by the one rule, line by line: text from
// the service, CertCentral or an import cannot reach the terminal raw,
// nor print a megabyte.
func TestErrorTextEscaped(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("client: order 401 is %s\nCheck --db", "canceled\x1b]0;PWNED\x07"+strings.Repeat("z", 1<<20))
	got := errorText(err)
	if strings.ContainsAny(got, "\x1b\x07") || len(got) > maxErrorLine+16 ||
		!strings.HasPrefix(got, `"client: order 401 is canceled\x1b]0;PWNED\a`) || !strings.HasSuffix(got, "\"...\nCheck --db") {
		t.Errorf("errorText = %.200q ... (%d bytes)", got, len(got))
	}
	if plain := errors.New("no certorder store at x\nCheck --db"); errorText(plain) != plain.Error() {
		t.Errorf("a plain error changed: %q", errorText(plain))
	}
}
