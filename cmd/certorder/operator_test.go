package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/sqlite"
	"github.com/certorder/certorder/storetest"
)

// helpPaths is every command and group, as typed before --help.
func helpPaths() [][]string {
	paths := [][]string{{}, {"admin"}}
	for _, c := range topCommands {
		paths = append(paths, []string{c.name})
	}
	for _, c := range devCommands {
		paths = append(paths, []string{"dev", c.name})
	}
	groups := map[string]bool{}
	for _, c := range (&env{}).adminCommands() {
		words := strings.Fields(c.name)
		if len(words) == 2 && !groups[words[0]] {
			groups[words[0]] = true
			paths = append(paths, []string{"admin", words[0]})
		}
		paths = append(paths, append([]string{"admin"}, words...))
	}
	return paths
}

// Every command and group answers -h, --help and help with its usage on
// stdout and exit 0, and creates nothing while at it.
func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newCLI(t, filepath.Join(dir, "certorder.db"))
	for _, path := range helpPaths() {
		forms := [][]string{append(append([]string{}, path...), "--help"), append(append([]string{}, path...), "-h")}
		if len(path) > 0 {
			forms = append(forms, append([]string{"help"}, path...))
		}
		for _, args := range forms {
			out, errOut, err := c.run("", args...)
			if err != nil || !strings.HasPrefix(out, "usage: certorder") || errOut != "" {
				t.Errorf("certorder %s: err %v, stdout %.60q, stderr %q", strings.Join(args, " "), err, out, errOut)
			}
		}
	}
	// A whole admin command's help shows its summary and its flags.
	if out := c.ok("admin", "backup", "--help"); !strings.Contains(out, "copy a live SQLite store") || !strings.Contains(out, "-audit") {
		t.Errorf("admin backup --help:\n%s", out)
	}
	// --help after the arguments works too.
	c.ok("admin", "member", "add", "alice", "--help")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--help created %v", entries)
	}

	// The top-level usage names every command.
	usage := c.ok("--help")
	for _, path := range helpPaths()[1:] {
		if !strings.Contains(usage, strings.Join(path, " ")) {
			t.Errorf("the usage does not list %q", strings.Join(path, " "))
		}
	}
	// No command, or a group's command left out: exit 2, the list on
	// stderr, stdout empty (a mistyped one is one line: TestMistypedCommands).
	for _, args := range [][]string{{}, {"admin"}, {"admin", "member"}, {"admin", "sync", "webhook"}, {"dev"}} {
		out, errOut, err := c.run("", args...)
		if exitCode(err) != exitUsage || out != "" || !strings.Contains(errOut, "usage: certorder") {
			t.Errorf("certorder %s: exit %d, stdout %q, stderr %.80q", strings.Join(args, " "), exitCode(err), out, errOut)
		}
	}
}

// The real process exits 0 on --help and 2 on an unknown command.
func TestHelpExitCodes(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for args, want := range map[string]int{"--help": 0, "admin member add --help": 0, "serve -h": 0, "frob": 2, "admin --db x": 2} {
		cmd := exec.Command(bin, strings.Fields(args)...)
		cmd.Dir = t.TempDir()
		err := cmd.Run()
		if got := cmd.ProcessState.ExitCode(); got != want {
			t.Errorf("certorder %s: exit %d (%v), want %d", args, got, err, want)
		}
	}
}

// A mistyped --db never creates a store: every command but migrate and
// restore refuses, names the path, and says how to create a store.
func TestMistypedDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	typo := filepath.Join(dir, "certordr.db")
	c := newCLI(t, typo)
	for _, cmd := range c.adminCommandsForTest() {
		if cmd.creates {
			continue
		}
		args := append([]string{"admin"}, strings.Fields(cmd.name)...)
		for range cmd.nargs {
			args = append(args, "1")
		}
		if cmd.name == "order import" {
			args = append(args, "--member", "alice")
		}
		msg := c.fails(exitUsage, args...)
		if !strings.Contains(msg, typo+": the file does not exist") || !strings.Contains(msg, "certorder admin migrate --db "+typo) {
			t.Errorf("%s: %s", strings.Join(args, " "), msg)
		}
	}
	if msg := c.fails(exitUsage, "admin", "member", "list", "--db", filepath.Join(dir, "nodir", "x.db")); !strings.Contains(msg, "the directory "+filepath.Join(dir, "nodir")+" does not exist") {
		t.Errorf("missing directory: %s", msg)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused command left %v", entries)
	}
	// The commands that create a store on purpose.
	c.ok("admin", "migrate")
	c.ok("admin", "member", "list")
	restored := newCLI(t, filepath.Join(dir, "restored.db"))
	if _, errOut, err := restored.run(`{"type":"member","name":"alice","created_at":"2026-01-01T00:00:00Z"}`+"\n", "admin", "restore", "-"); err != nil {
		t.Fatalf("restore into a new store: %v %s", err, errOut)
	}
}

// adminCommandsForTest is the admin table (a method value needs an env).
func (c *cli) adminCommandsForTest() []adminCommand { return (&env{}).adminCommands() }

func TestVersion(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if out := c.ok(args...); !regexp.MustCompile(`^certorder \S+ \(commit \S+.*, built \S+, go1\.`).MatchString(out) {
			t.Errorf("certorder %s: %q", args[0], out)
		}
	}
	// What the release build sets with -ldflags is what it prints: CI
	// checks it on GoReleaser's binary (.ci/run, "release build"), which
	// it builds anyway, rather than linking one more binary here (seconds
	// of CPU in every run of the suite).
}

// admin backup copies a store that serve and another writer keep changing;
// the copy holds what was committed before it began, and serve runs on it
// with the same keys.
func TestAdminBackupLive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newCLI(t, filepath.Join(dir, "live.db"))
	endpoint, stdout := startServe(t, c, "--demo", "--rate-limit", "0", "--ip-rate-limit", "0")
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]

	// Writers: members added one by one as separate admin commands, and API
	// calls, which serve writes to the audit trail.
	var mu sync.Mutex
	var added []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	deadline := time.Now().Add(30 * time.Second)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("m%03d", i)
			if _, errOut, err := c.run("", "admin", "member", "add", name); err != nil {
				t.Errorf("member add %s: %v %s", name, err, errOut)
				return
			}
			mu.Lock()
			added = append(added, name)
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			if status, _ := post(t, endpoint, request("demo", key, "OrderInfo", "10003")); status != 200 {
				t.Errorf("OrderInfo: %d", status)
				return
			}
		}
	}()
	poll.Within(time.Until(deadline), func() bool { // checked below
		mu.Lock()
		defer mu.Unlock()
		return len(added) >= 10
	})
	mu.Lock()
	before := append([]string(nil), added...)
	mu.Unlock()
	// Until serve has written API calls to the audit trail (every 250 ms).
	poll.Within(10*time.Second, func() bool { // checked in the backup below
		return strings.Contains(c.ok("admin", "audit", "--limit", "0"), `OrderInfo  10003`)
	})
	backup := filepath.Join(dir, "backup.db")
	out, errOut, err := c.run("", "admin", "backup", backup, "--audit")
	close(stop)
	wg.Wait()
	if err != nil || !strings.Contains(out, "store copied to "+backup) || !strings.Contains(out, sqlite.AuditPath(backup)) {
		t.Fatalf("admin backup: %v %q %s", err, out, errOut)
	}
	if len(before) < 10 {
		t.Fatalf("only %d members were added before the backup", len(before))
	}

	b := newCLI(t, backup)
	list := b.ok("admin", "member", "list")
	for _, name := range append(before, "demo") {
		if !regexp.MustCompile(`(?m)^` + name + `\s+enabled`).MatchString(list) {
			t.Errorf("member %s, added before the backup, is not in it", name)
		}
	}
	if audit := b.ok("admin", "audit", "--limit", "0"); !strings.Contains(audit, `OrderInfo  10003`) {
		t.Errorf("the backup's audit trail lacks the API calls:\n%.400s", audit)
	}
	restoredEndpoint, _ := startServe(t, b)
	if status, body := post(t, restoredEndpoint, request("demo", key, "OrderInfo", "10003")); status != 200 || !strings.Contains(body, `"OrderId":10003`) {
		t.Fatalf("serve on the backup: %d %s", status, body)
	}

	// Not over an existing file; not on PostgreSQL, which pg_dump backs up.
	if msg := c.fails(exitFailure, "admin", "backup", backup); !strings.Contains(msg, "already exists") {
		t.Errorf("backup over a file: %s", msg)
	}
	pg := "postgres://certorder:s3cret@127.0.0.1:1/certorder"
	if msg := c.fails(exitUsage, "admin", "backup", filepath.Join(dir, "pg.db"), "--db", pg); !strings.Contains(msg, "pg_dump") || strings.Contains(msg, "s3cret") {
		t.Errorf("backup on PostgreSQL: %s", msg)
	}
}

// The member commands say in words what went wrong, with the numbers.
func TestMemberMessages(t *testing.T) {
	t.Parallel()
	srv := newCLI(t, testdb.SQLite(t))
	endpoint, stdout := startServe(t, srv, "--demo", "--auth-fail-limit", "1", "--auth-lockout", "15m")
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]
	// Order 20001 names a renewal, 29999, that was never imported.
	if _, errOut, err := srv.run(storetest.OrderJSON(20001, 29999, "2030-01-01"), "admin", "order", "import", "--member", "demo", "-"); err != nil {
		t.Fatalf("import: %v %s", err, errOut)
	}
	m := newCLI(t, "")
	m.env["CERTORDER_URL"], m.env["CERTORDER_ACCESS_NAME"], m.env["CERTORDER_ACCESS_KEY"] = endpoint, "demo", key

	if msg := m.fails(exitNotRenewed, "renew-check", "10003"); !strings.Contains(msg, "order 10003 has not been renewed") {
		t.Errorf("not renewed: %s", msg)
	}
	if msg := m.fails(exitNoSuchOrder, "info", "424242"); !strings.Contains(msg, "no such order: 424242 is not an order of member demo") {
		t.Errorf("no such order: %s", msg)
	}
	if msg := m.fails(exitNoSuchOrder, "current", "20001"); !strings.Contains(msg, "order 20001 was renewed by order 29999, which is missing") {
		t.Errorf("current on a broken chain: %s", msg)
	}

	// A URL without /api/<segment>/: the configuration, not "try later".
	base := strings.TrimSuffix(endpoint, "api/digicert/")
	// What answered is said in a few words, not quoted (the member page's HTML).
	for url, answered := range map[string]string{base: "it answered HTTP 404 and an HTML page",
		base + "api/sectigo/": `it answered "Error(102) path is failed.", no endpoint at that path`} {
		if msg := m.fails(exitUsage, "auth", "--url", url); !strings.Contains(msg, "probably lacks /api/<segment>/") ||
			!strings.Contains(msg, answered) || strings.Contains(strings.ToLower(msg), "<html") {
			t.Errorf("auth --url %s: %s", url, msg)
		}
	}
	// Nobody listening: what to check.
	if msg := m.fails(exitUnreachable, "auth", "--url", "http://127.0.0.1:1/api/digicert/", "--timeout", "2s"); !strings.Contains(msg,
		"no answer from http://127.0.0.1:1/api/digicert/: nothing listens there; check that the service (certorder serve) runs") {
		t.Errorf("service down: %s", msg)
	}

	// Locked out after one failure: how long to wait, from Retry-After.
	m.env["CERTORDER_ACCESS_KEY"] = key + "x"
	m.fails(exitCredentials, "auth")
	if msg := m.fails(exitUnreachable, "auth"); !strings.Contains(msg, "wait 15m0s") || strings.Contains(msg, key) {
		t.Errorf("locked out: %s", msg)
	}
}
