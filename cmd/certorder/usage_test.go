package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/storetest"
)

// Usage errors exit 2 and say what is wrong; failures of the machine exit 1
// and name what failed. Through run(), as the shell sees them.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty.key", "", 0o600)
	private := write("private.key", "cok_x\n", 0o600)
	public := write("public.key", "cok_x\n", 0o644)
	syntaxError := write("syntax.json", "[\n"+storetest.OrderJSON(7, 0, "2027-01-01")+",\n{\"OrderId\": 8, \"status\": \"issued\",}\n]", 0o600)
	noStatus := write("order.json", `{"OrderId": 5, "certificate": {"common_name": "x.example", "valid_till": "2027-01-01"}}`, 0o600)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	refused := "http://127.0.0.1:1/api/digicert/" // nothing listens on port 1

	store := testdb.SQLite(t)
	c := newStoreCLI(t, store)
	c.ok("admin", "member", "add", "alice")
	fresh := filepath.Join(t.TempDir(), "fresh.db") // serve must not create it

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		want   string // in the error and stderr
		absent string // not in them
		once   string // exactly once in them
	}{
		// Plain http off loopback is warned about before anything is sent
		// (here nothing is: the name is missing).
		{name: "plain http to another host", args: []string{"auth", "--url", "http://192.0.2.1/api/digicert/"}, code: exitUsage,
			want: "http://192.0.2.1/api/digicert/ is plain http: the access key crosses the network unencrypted"},
		{name: "invalid member name", args: []string{"admin", "member", "add", "Bad Name!"}, code: exitUsage,
			want: `member name "Bad Name!" may hold only`},
		{name: "nonsense --addr", args: []string{"serve", "--db", fresh, "--addr", "nonsense"}, code: exitUsage,
			want: `--addr "nonsense"`},
		{name: "--addr with a bad port", args: []string{"serve", "--db", fresh, "--addr", "127.0.0.1:99999"}, code: exitUsage,
			want: `port "99999" is not a number from 0 to 65535`},
		{name: "busy port", args: []string{"serve", "--db", fresh, "--addr", busy.Addr().String()}, code: exitFailure,
			want: "--addr " + busy.Addr().String()},
		{name: "busy metrics port", args: []string{"serve", "--db", fresh, "--addr", "127.0.0.1:0", "--metrics-addr", busy.Addr().String()},
			code: exitFailure, want: "--metrics-addr " + busy.Addr().String()},
		{name: "--db in no directory", args: []string{"serve", "--db", "/nonexistent/certorder.db"}, code: exitUsage,
			want: "--db /nonexistent/certorder.db: the directory /nonexistent does not exist"},
		{name: "sqlite: --db in no directory", args: []string{"serve", "--db", "sqlite:/nonexistent/certorder.db"}, code: exitUsage,
			want: "the directory /nonexistent does not exist"},
		// A mistyped PostgreSQL URL is not a SQLite file name, nor advice to make one.
		{name: "pg:// DSN", args: []string{"admin", "migrate", "--db", "pg://127.0.0.1/test"}, code: exitUsage,
			want: `scheme "pg" is not one certorder knows: for PostgreSQL, write postgres://`, absent: "sqlite"},
		{name: "postgres:/ DSN", args: []string{"admin", "member", "list", "--db", "postgres:/x"}, code: exitUsage,
			want: "a PostgreSQL URL starts with postgres:// (two slashes)", absent: "admin migrate"},
		{name: "mysql:// DSN", args: []string{"serve", "--db", "mysql://u:s3cret@127.0.0.1/db", "--addr", "127.0.0.1:0"}, code: exitUsage,
			want: `no store for scheme "mysql": give a PostgreSQL URL`, absent: "s3cret"},
		{name: "sync with a pg:// DSN", args: []string{"sync", "--db", "pg://127.0.0.1/test"}, code: exitUsage,
			want: `scheme "pg"`},
		{name: "sync without a key", args: []string{"sync", "--db", store}, code: exitUsage,
			want: "no CertCentral API key"},
		{name: "sync with a missing key file", args: []string{"sync", "--db", store, "--digicert-api-key-file", filepath.Join(dir, "nope")},
			code: exitUsage, want: "--digicert-api-key-file: open " + filepath.Join(dir, "nope")},
		{name: "sync with an empty key file", args: []string{"sync", "--db", store, "--digicert-api-key-file", empty},
			code: exitUsage, want: "the key file is empty"},
		{name: "serve --sync-every with an empty key file", args: []string{"serve", "--db", fresh, "--addr", "127.0.0.1:0",
			"--sync-every", "1h", "--digicert-api-key-file", empty}, code: exitUsage, want: "the key file is empty"},
		{name: "auth with an empty key file", args: []string{"auth", "--url", refused, "--access-name", "alice", "--access-key-file", empty},
			code: exitUsage, want: "the key file is empty", absent: "need --url"},
		{name: "info without --access-name", args: []string{"info", "5", "--url", refused, "--access-key-file", private},
			code: exitUsage, want: "missing --access-name (or CERTORDER_ACCESS_NAME)", absent: "--url"},
		{name: "auth without --url", args: []string{"auth", "--access-name", "alice", "--access-key-file", private},
			code: exitUsage, want: "missing --url (or CERTORDER_URL)", absent: "access-name"},
		{name: "a key file others may read", args: []string{"auth", "--url", refused, "--access-name", "alice", "--access-key-file", public},
			code: exitUnreachable, want: "the key file " + public + " is readable by every user (mode 0644)"},
		{name: "a private key file", args: []string{"auth", "--url", refused, "--access-name", "alice", "--access-key-file", private},
			code: exitUnreachable, absent: "readable by every user"},
		{name: "unknown flag", args: []string{"admin", "member", "list", "--db", store, "--bogus"}, code: exitUsage,
			once: "unknown flag --bogus"},
		{name: "unknown flag of serve", args: []string{"serve", "--bogus"}, code: exitUsage,
			once: "unknown flag --bogus", absent: "Flags:"},
		// One line naming the flag meant, not the usage's 90.
		{name: "serve --port", args: []string{"serve", "--port", "9090"}, code: exitUsage,
			want: "serve: unknown flag --port: did you mean --addr? ('certorder serve --help' lists its flags)", absent: "Flags:"},
		{name: "a flag mistyped", args: []string{"admin", "order", "import", "--membr", "alice", noStatus}, code: exitUsage,
			want: "unknown flag --membr: did you mean --member?", absent: "Flags:"},
		{name: "a flag without its value", args: []string{"info", "5", "--url"}, code: exitUsage,
			want: "info: flag needs an argument: -url ('certorder info --help' lists its flags)", absent: "Flags:"},
		{name: "import without --member", args: []string{"admin", "order", "import", "--db", store, noStatus}, code: exitUsage,
			want: "--member is required"},
		{name: "webhook add http", args: []string{"admin", "webhook", "add", "--db", store, "alice", "http://hooks.example.com/x"},
			code: exitUsage, want: "it must be https; an intranet or test endpoint (http, or a loopback, private or link-local address) needs --allow-private"},
		{name: "webhook add loopback", args: []string{"admin", "webhook", "add", "--db", store, "alice", "https://127.0.0.1/x"},
			code: exitUsage, want: "needs --allow-private here, and serve --webhook-allow-private"},
		{name: "webhook add ftp", args: []string{"admin", "webhook", "add", "--db", store, "alice", "ftp://hooks.example.com/x"},
			code: exitUsage, want: `scheme "ftp" is not http(s)`, absent: "--allow-private"},
		{name: "import with a syntax error", args: []string{"admin", "order", "import", "--db", store, "--member", "alice", syntaxError},
			code: exitFailure, want: "order 2: OrderId 8: not valid JSON at line 3, column 35 (byte "},
		{name: "import without status", args: []string{"admin", "order", "import", "--db", store, "--member", "alice", noStatus},
			code: exitFailure, want: "OrderId 5: status is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := c.run("", tc.args...)
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit %d, want %d: %v\n%s", got, tc.code, err, stderr)
			}
			msg := stderr
			if err != nil {
				msg += "\n" + err.Error() // main prints it last
			}
			if tc.want != "" && !strings.Contains(msg, tc.want) {
				t.Errorf("no %q in:\n%s", tc.want, msg)
			}
			if tc.absent != "" && strings.Contains(msg, tc.absent) {
				t.Errorf("%q in:\n%s", tc.absent, msg)
			}
			if tc.once != "" && strings.Count(msg, tc.once) != 1 {
				t.Errorf("%q %d times in:\n%s", tc.once, strings.Count(msg, tc.once), msg)
			}
			if _, err := os.Stat(fresh); err == nil {
				t.Fatalf("%s was created", fresh)
			}
		})
	}
	if out := c.ok("admin", "order", "list", "alice"); strings.Contains(out, "5") {
		t.Errorf("the order without status was imported:\n%s", out)
	}
}
