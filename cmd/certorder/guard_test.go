package main

import (
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/storetest"
)

// A sync that reaches no CertCentral (nothing listens at the URL's port,
// or its host does not resolve) stops at once with one line naming the URL
// and the flag to check, exit 1, and prints nothing that reads as a run's
// findings: not the divisions' unassigned orders an earlier run left. A
// 5xx still is retried. Only loopback is dialled: the client answers
// .invalid itself (RFC 6761).
func TestSyncUnreachable(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	if _, err := u.sim.Generate(20, 1); err != nil {
		t.Fatal(err)
	}
	c := syncCLI(t, testdb.SQLite(t), u)
	if _, out := c.sync(); !strings.Contains(out, "unassigned order(s)") {
		t.Fatalf("the first sync lists no unassigned orders, so the test proves nothing:\n%s", out)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	for _, tc := range []struct{ url, reason string }{
		{"http://" + refused + "/services/v2/", "connection refused: nothing listens at " + refused},
		{"https://cc.example.invalid/services/v2/", "the host cc.example.invalid does not resolve"},
	} {
		for _, args := range [][]string{{"sync"}, {"sync", "--dry-run"}, {"sync", "--full"}} {
			args = append(args, "--digicert-url", tc.url)
			began := time.Now()
			out, errOut, err := c.run("", args...)
			took := time.Since(began)
			want := "sync: CertCentral at " + tc.url + " cannot be reached: " + tc.reason +
				"; check --digicert-url (or CERTORDER_DIGICERT_URL)"
			if exitCode(err) != exitFailure || err.Error() != want || out != "" || errOut != "" {
				t.Errorf("certorder %s: exit %d\nerr    %v\nwant   %s\nstdout %q\nstderr %q",
					strings.Join(args, " "), exitCode(err), err, want, out, errOut)
			}
			if took > 5*time.Second {
				t.Errorf("certorder %s took %v: it retried what cannot pass", strings.Join(args, " "), took)
			}
		}
	}
	// The commands of CertCentral's webhook say the same.
	for _, cmd := range []string{"test", "status"} {
		url := "http://" + refused + "/services/v2/"
		_, errOut, err := c.run("", "admin", "sync", "webhook", cmd, "--digicert-url", url)
		want := "admin sync webhook " + cmd + ": CertCentral at " + url + " cannot be reached: connection refused: nothing listens at " +
			refused + "; check --digicert-url (or CERTORDER_DIGICERT_URL)"
		if exitCode(err) != exitFailure || err.Error() != want || errOut != "" {
			t.Errorf("admin sync webhook %s: exit %d\nerr  %v\nwant %s\nstderr %q", cmd, exitCode(err), err, want, errOut)
		}
	}
	// The failures are recorded: sync status does not show the last run as ok.
	if st := c.ok("admin", "sync", "status"); !strings.Contains(st, "failed, by") || !strings.Contains(st, "cannot be reached") {
		t.Errorf("sync status after the failures:\n%s", st)
	}

	// What may pass is retried: a 503, then the answers.
	u.sim.FailNext(1, http.StatusServiceUnavailable)
	if summary, _ := c.sync(); !strings.HasPrefix(summary, "sync ok") || !strings.Contains(summary, "(1 retried)") {
		t.Errorf("after one 503: %s", summary)
	}
}

// serve --demo refuses a real store (a member other than demo, or orders
// a sync brought) before writing anything: exit 2, one line saying why and
// what to do. A new or empty store, and one only the demo has used, serve.
func TestServeDemoRefusesARealStore(t *testing.T) {
	t.Parallel()
	refused := func(c *cli, what string) {
		t.Helper()
		before := c.ok("admin", "export")
		out, errOut, err := c.run("", "serve", "--demo", "--addr", "127.0.0.1:0")
		want := "serve: --demo would add member demo, its orders and a key to the store " + c.env["CERTORDER_DB"] +
			", which holds " + what + ": give the demo a store of its own (--db demo.db), or drop --demo to serve this one"
		if exitCode(err) != exitUsage || err.Error() != want || out != "" || errOut != "" {
			t.Errorf("serve --demo on a store holding %s: exit %d\nerr    %v\nwant   %s\nstdout %q\nstderr %q",
				what, exitCode(err), err, want, out, errOut)
		}
		if after := c.ok("admin", "export"); after != before {
			t.Errorf("the refused demo changed the store:\n%s", after)
		}
	}
	c := newStoreCLI(t, testdb.SQLite(t))
	c.ok("admin", "member", "add", "alice")
	refused(c, "member alice")
	for _, m := range []string{"bob", "carol", "dave", "demo"} {
		c.ok("admin", "member", "add", m)
	}
	refused(c, "members alice, bob, carol and 1 more")

	// A store of an older schema (the newest migration not yet recorded) is
	// refused before it is opened: not migrated by the demo it refuses.
	db, err := sql.Open("sqlite", c.env["CERTORDER_DB"])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	versions := func() (n int) {
		t.Helper()
		if err := db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.Exec(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	before := versions()
	if _, _, err := c.run("", "serve", "--demo", "--addr", "127.0.0.1:0"); exitCode(err) != exitUsage || !strings.Contains(fmt.Sprint(err), "which holds members alice") {
		t.Errorf("serve --demo on an older store holding alice: exit %d: %v", exitCode(err), err)
	}
	if after := versions(); after != before {
		t.Errorf("serve --demo migrated the store it refused: %d migrations recorded, then %d", before, after)
	}

	// No member, but orders from CertCentral.
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	if _, err := u.sim.Generate(20, 1); err != nil {
		t.Fatal(err)
	}
	synced := syncCLI(t, testdb.SQLite(t), u)
	synced.sync()
	m := regexp.MustCompile(`unassigned orders: (\d+)`).FindStringSubmatch(synced.ok("admin", "sync", "status"))
	if m == nil || m[1] == "0" {
		t.Fatalf("the sync left no unassigned order: %v", m)
	}
	refused(synced, m[1]+" CertCentral order(s) from a sync")

	// A new store, an empty one, and one the demo alone has used: served.
	for _, c := range []*cli{newCLI(t, filepath.Join(t.TempDir(), "new.db")), newStoreCLI(t, testdb.SQLite(t))} {
		for range 2 {
			if _, stdout := startServe(t, c, "--demo"); !strings.Contains(stdout.String(), "AccessKey:") {
				t.Errorf("serve --demo on %s:\n%s", c.env["CERTORDER_DB"], stdout)
			}
		}
	}
}

// admin order import takes the member as its first argument, as order
// list, webhook add and notice add do; --member still works, and the two
// disagreeing is a usage error. --dry-run checks and counts without
// writing, and what it counts is what the import then does. On both stores:
// the dry run is the import's own transaction, rolled back.
func TestOrderImportMemberAndDryRun(t *testing.T) {
	t.Parallel()
	testdb.Each(t, testOrderImportMemberAndDryRun)
}

func testOrderImportMemberAndDryRun(t *testing.T, dsn string) {
	c := newStoreCLI(t, dsn)
	c.ok("admin", "member", "add", "alice")
	c.ok("admin", "member", "add", "bob")
	first := writeFile(t, "["+storetest.OrderJSON(7001, 0, "2027-01-01")+","+storetest.OrderJSON(7002, 0, "2027-01-01")+"]")
	if out := c.ok("admin", "order", "import", "alice", first); out != "imported 2 order(s) for member alice\n" {
		t.Errorf("import MEMBER FILE: %q", out)
	}
	if out := c.ok("admin", "order", "import", "--member", "alice", first); out != "imported 2 order(s) for member alice\n" {
		t.Errorf("import --member NAME FILE: %q", out)
	}
	if out := c.ok("admin", "order", "import", "alice", first, "--member", "alice"); out != "imported 2 order(s) for member alice\n" {
		t.Errorf("import MEMBER FILE --member MEMBER: %q", out)
	}
	msg := c.fails(exitUsage, "admin", "order", "import", "alice", first, "--member", "bob")
	if want := `order import: the member is given twice, "alice" as the argument and "bob" as --member: give it once`; msg != want {
		t.Errorf("two members:\n%s\nwant\n%s", msg, want)
	}
	if msg := c.fails(exitUsage, "admin", "order", "import", first); !strings.Contains(msg, "a MEMBER argument or --member is required") {
		t.Errorf("no member: %s", msg)
	}
	if msg := c.fails(exitUsage, "admin", "order", "import", "alice", "bob", first); !strings.Contains(msg, "want 1 to 2 argument(s), got 3") {
		t.Errorf("three arguments: %s", msg)
	}

	// A dry run: one order replaced (7002, now revoked), two new.
	second := "[" + strings.Replace(storetest.OrderJSON(7002, 0, "2027-01-01"), `"issued"`, `"revoked"`, 1) + "," +
		storetest.OrderJSON(7003, 0, "2027-02-01") + "," + storetest.OrderJSON(7004, 0, "2027-01-01") + "]"
	if !strings.Contains(second, `"revoked"`) {
		t.Fatal("the test's order 7002 is not revoked")
	}
	before := c.ok("admin", "export")
	beforeList := c.ok("admin", "order", "list", "alice")
	for _, args := range [][]string{{"alice", "-", "--dry-run"}, {"--dry-run", "--member", "alice", "-"}} {
		out, errOut, err := c.run(second, append([]string{"admin", "order", "import"}, args...)...)
		if want := "dry run, nothing written: would import 3 order(s) for member alice (2 new, 1 replaced)\n"; err != nil || out != want {
			t.Errorf("import %s: %v %s\n%q\nwant %q", strings.Join(args, " "), err, errOut, out, want)
		}
	}
	if after := c.ok("admin", "export"); after != before {
		t.Errorf("a dry run wrote:\n%s", after)
	}
	if list := c.ok("admin", "order", "list", "alice"); list != beforeList {
		t.Errorf("a dry run changed the order list:\n%s", list)
	}
	if out, errOut, err := c.run(second, "admin", "order", "import", "alice", "-"); err != nil || out != "imported 3 order(s) for member alice\n" {
		t.Errorf("the import after the dry run: %v %s\n%q", err, errOut, out)
	}
	if list := c.ok("admin", "order", "list", "alice"); !strings.Contains(list, "7004") || !strings.Contains(list, "7003") {
		t.Errorf("the import did not store its orders:\n%s", list)
	}

	// What the import refuses, the dry run refuses the same way: bob's
	// file names alice's order.
	before = c.ok("admin", "export")
	theft := writeFile(t, "["+storetest.OrderJSON(8001, 0, "2027-01-01")+","+storetest.OrderJSON(7001, 0, "2027-01-01")+"]")
	dry := c.fails(exitFailure, "admin", "order", "import", "--dry-run", "bob", theft)
	real := c.fails(exitFailure, "admin", "order", "import", "bob", theft)
	if cause, ok := strings.CutPrefix(dry, "dry run: the import would fail, nothing written: "); !ok || "nothing imported: "+cause != real {
		t.Errorf("dry run and import disagree:\n%s\n%s", dry, real)
	}
	if after := c.ok("admin", "export"); after != before {
		t.Errorf("a refused import wrote:\n%s", after)
	}
}

// commandGroups is every place a command name is typed: the first word,
// admin, each admin group at any depth (member, sync, sync webhook), dev;
// each with the names that may follow it.
func commandGroups() map[string][]string {
	e := &env{}
	groups := map[string][]string{}
	var walk func(path []string)
	walk = func(path []string) {
		kids := e.children(path)
		if len(kids) == 0 {
			return
		}
		for _, k := range kids {
			groups[strings.Join(path, " ")] = append(groups[strings.Join(path, " ")], k.word)
			walk(append(slices.Clone(path), k.word))
		}
	}
	walk(nil)
	return groups
}

// A mistyped command, at every level, is one line naming the closest
// command there and the help that lists them, exit 2, nothing else on
// stdout or stderr: each command of each group with a letter left out,
// and with two letters swapped. A word close to nothing gets the line
// without a guess. Nothing is created.
func TestMistypedCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newCLI(t, filepath.Join(dir, "certorder.db"))
	groups := commandGroups()
	for _, want := range []string{"", "admin", "admin member", "admin sync", "admin sync webhook", "dev"} {
		if len(groups[want]) == 0 {
			t.Fatalf("the walk missed the group %q: %v", want, groups)
		}
	}
	check := func(path, typo, want string) {
		t.Helper()
		args := append(strings.Fields(path), typo)
		out, errOut, err := c.run("", args...)
		if exitCode(err) != exitUsage || out != "" || errOut != "" || err.Error() != want {
			t.Errorf("certorder %s: exit %d\nerr    %v\nwant   %s\nstdout %q\nstderr %q",
				strings.Join(args, " "), exitCode(err), err, want, out, errOut)
		}
	}
	n := 0
	for path, names := range groups {
		prefix := ""
		if path != "" {
			prefix = path + ": "
		}
		help := strings.TrimSpace("certorder " + path)
		for _, name := range names {
			if len(name) < 3 {
				continue // nothing left to recognize it by
			}
			mid := len(name) / 2
			dropped := name[:mid] + name[mid+1:]
			swapped := name[:mid-1] + name[mid:mid+1] + name[mid-1:mid] + name[mid+1:]
			for _, typo := range []string{dropped, swapped} {
				if typo == name {
					continue // two equal letters swapped
				}
				n++
				check(path, typo, fmt.Sprintf("%sunknown command %q; did you mean %q? ('%s --help' lists the commands)",
					prefix, typo, name, help))
			}
		}
		check(path, "xyzzy", fmt.Sprintf("%sunknown command \"xyzzy\" ('%s --help' lists the commands)", prefix, help))
	}
	t.Logf("%d mistyped commands in %d groups", n, len(groups))

	// The three, and a few more a person types.
	for _, tc := range []struct{ args, want string }{
		{"admn", `unknown command "admn"; did you mean "admin"?`},
		{"admin memebr list", `admin: unknown command "memebr"; did you mean "member"?`},
		{"admin member lst", `admin member: unknown command "lst"; did you mean "list"?`},
		{"admin member ls", `admin member: unknown command "ls"; did you mean "list"?`},
		{"member list", `unknown command "member"; did you mean "admin member"?`},
		{"help admn", `unknown command "admn"; did you mean "admin"?`},
		{"admin --db x member list", `admin: "--db" is not a command: the command comes first, then its flags`},
	} {
		out, errOut, err := c.run("", strings.Fields(tc.args)...)
		if exitCode(err) != exitUsage || out != "" || errOut != "" || !strings.HasPrefix(err.Error(), tc.want) ||
			strings.Contains(err.Error(), "\n") {
			t.Errorf("certorder %s: exit %d, err %v, stdout %q, stderr %q; want %s", tc.args, exitCode(err), err, out, errOut, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a mistyped command created %v", entries)
	}
}
