package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/storetest"
)

// unissuedOrderJSON is an order CertCentral has not issued yet (or never
// will): its certificate has no valid_till.
func unissuedOrderJSON(id int64, status string) string {
	return fmt.Sprintf(`{"OrderId":%d,"certificate":{"id":%d,"common_name":"host%d.example.com",`+
		`"dns_names":["host%d.example.com"],"status":%q},"status":%q,`+
		`"product":{"name_id":"ssl_basic","name":"Basic","type":"ssl_certificate","csr_required":true}}`,
		id, id*10, id, id, status, status)
}

// acmeChains is a service with member acme and these chains:
// 21000105 -> 21000106 (pending); 300 -> 301 -> 302 (issued); 400 -> 401
// (canceled); 500 (issued, not renewed). It returns the member's shell and
// the key.
func acmeChains(t *testing.T) (*cli, string) {
	t.Helper()
	m, _, key := acmeChainsWithOperator(t)
	return m, key
}

// acmeChainsWithOperator is acmeChains with the operator's shell too.
func acmeChainsWithOperator(t *testing.T) (member, operator *cli, key string) {
	t.Helper()
	op := newStoreCLI(t, testdb.SQLite(t))
	op.ok("admin", "member", "add", "acme")
	key = lastLine(op.ok("admin", "key", "create", "acme"))
	docs := []string{
		storetest.OrderJSON(21000105, 0, "2099-01-01"), unissuedOrderJSON(21000106, "pending"),
		storetest.OrderJSON(300, 0, "2020-01-01"), storetest.OrderJSON(301, 0, "2021-01-01"), storetest.OrderJSON(302, 0, "2099-01-01"),
		storetest.OrderJSON(400, 0, "2099-01-01"), unissuedOrderJSON(401, "canceled"),
		storetest.OrderJSON(500, 0, "2099-01-01"),
	}
	if out, errOut, err := op.run("["+strings.Join(docs, ",")+"]", "admin", "order", "import", "--member", "acme", "-"); err != nil {
		t.Fatalf("import: %v %s %s", err, out, errOut)
	}
	for _, r := range [][2]string{{"21000105", "21000106"}, {"300", "301"}, {"301", "302"}, {"400", "401"}} {
		op.ok("admin", "order", "renew", r[0], r[1])
	}
	endpoint, _ := startServe(t, op)
	m := newCLI(t, "")
	m.env["CERTORDER_URL"] = endpoint
	m.env["CERTORDER_ACCESS_NAME"] = "acme"
	m.env["CERTORDER_ACCESS_KEY"] = key
	return m, op, key
}

func TestACMEURL(t *testing.T) {
	t.Parallel()
	m, key := acmeChains(t)
	const dc = "https://one.digicert.com/mpki/api/v1/acme/v2/directory"
	// A renewal file as Debian's certbot 2.1 wrote it in .ci/acme.sh, its
	// paths and server moved to the usual places; read from a read-only copy.
	certbotConf, err := os.ReadFile("testdata/certbot-renewal-www.conf")
	if err != nil {
		t.Fatal(err)
	}
	renewal := filepath.Join(t.TempDir(), "www.conf")
	if err := os.WriteFile(renewal, certbotConf, 0o400); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		out    string // stdout
		stderr string
		exit   int
	}{
		{name: "renewed into a pending order", args: []string{dc + "?action=renew&orderId=21000105"},
			out: dc + "?action=renew&orderId=21000106", stderr: "order 21000105 was renewed by 21000106 (pending)\n"},
		{name: "already the newest", args: []string{dc + "?orderId=21000106&action=renew"}, out: dc + "?orderId=21000106&action=renew"},
		{name: "two-step chain", args: []string{dc + "?action=renew&orderId=300"},
			out: dc + "?action=renew&orderId=302", stderr: "order 300 was renewed by 301; the newest order of its chain (300 -> 301 -> 302) is 302 (issued)\n"},
		{name: "not renewed", args: []string{dc + "?orderId=500"}, out: dc + "?orderId=500"},
		{name: "other bytes kept", args: []string{"https://one.digicert.co.jp:8443/mpki/api/v1/acme/v2/directory?z=%41%2b&orderId=21000105&a=b+c&empty&x=1#frag"},
			out:    "https://one.digicert.co.jp:8443/mpki/api/v1/acme/v2/directory?z=%41%2b&orderId=21000106&a=b+c&empty&x=1#frag",
			stderr: "order 21000105 was renewed by 21000106 (pending)\n"},
		{name: "escaped name", args: []string{dc + "?order%49d=300"}, out: dc + "?order%49d=302", stderr: "order 300 was renewed by 301; the newest order of its chain (300 -> 301 -> 302) is 302 (issued)\n"},
		{name: "orderId in another case", args: []string{dc + "?action=renew&OrderId=300"}, out: dc + "?action=renew&OrderId=302",
			stderr: "order 300 was renewed by 301; the newest order of its chain (300 -> 301 -> 302) is 302 (issued)\n"},
		{name: "orderid, --order", args: []string{dc + "?orderid=500", "--order", "500"}, out: dc + "?orderid=500"},
		{name: "orderId in two cases", args: []string{dc + "?OrderId=500&orderId=500"}, exit: exitUsage},
		{name: "action in two cases", args: []string{dc + "?Action=renew&action=enroll&orderId=500"}, exit: exitUsage},
		{name: "--action replaces Action", args: []string{"--action", "renew", dc + "?ACTION=enroll&orderId=500"}, out: dc + "?ACTION=renew&orderId=500"},
		{name: "--order adds orderId", args: []string{dc + "?action=renew", "--order", "21000105"}, out: dc + "?action=renew&orderId=21000106",
			stderr: "order 21000105 was renewed by 21000106 (pending)\n"},
		{name: "--order without a query", args: []string{"--order", "500", dc}, out: dc + "?orderId=500"},
		{name: "--order, a trailing &", args: []string{"--order", "500", dc + "?a=1&"}, out: dc + "?a=1&orderId=500"},
		{name: "--order agrees", args: []string{"--order", "500", dc + "?orderId=500"}, out: dc + "?orderId=500"},
		{name: "--order disagrees", args: []string{"--order", "300", dc + "?orderId=500"}, exit: exitUsage},
		{name: "--action replaces", args: []string{"--action", "renew", dc + "?action=enroll&orderId=500&x=y"}, out: dc + "?action=renew&orderId=500&x=y"},
		{name: "--action adds", args: []string{"--action", "reissue", dc + "?orderId=500"}, out: dc + "?orderId=500&action=reissue"},
		{name: "--action and --order", args: []string{"--action", "duplicate", "--order", "500", dc}, out: dc + "?orderId=500&action=duplicate"},
		{name: "--action unknown", args: []string{"--action", "revoke", dc + "?orderId=500"}, exit: exitUsage},
		{name: "--certbot-renewal", args: []string{"--certbot-renewal", renewal}, out: dc + "?action=renew&orderId=21000106",
			stderr: "order 21000105 was renewed by 21000106 (pending)\n"},
		{name: "--certbot-renewal and a URL", args: []string{"--certbot-renewal", renewal, dc}, exit: exitUsage},
		{name: "--certbot-renewal missing", args: []string{"--certbot-renewal", renewal + ".nope"}, exit: exitUsage},
		{name: "--certbot-renewal not one", args: []string{"--certbot-renewal", "/dev/null"}, exit: exitUsage},
		{name: "http refused", args: []string{"http://acme.example.com/directory?orderId=500"}, exit: exitUsage},
		{name: "http on 127.0.0.2", args: []string{"http://127.0.0.2:14000/dir?orderId=500"}, out: "http://127.0.0.2:14000/dir?orderId=500"},
		{name: "http on ::1", args: []string{"http://[::1]:14000/dir?orderId=500"}, out: "http://[::1]:14000/dir?orderId=500"},
		{name: "http on localhost", args: []string{"http://localhost/dir?orderId=500"}, out: "http://localhost/dir?orderId=500"},
		{name: "not a URL", args: []string{"ftp://x/dir?orderId=500"}, exit: exitUsage},
		{name: "no orderId", args: []string{dc + "?action=renew"}, exit: exitUsage},
		{name: "two orderIds", args: []string{dc + "?orderId=500&orderId=300"}, exit: exitUsage},
		{name: "two actions", args: []string{dc + "?action=renew&action=enroll&orderId=500"}, exit: exitUsage},
		{name: "orderId not a number", args: []string{dc + "?orderId=abc"}, exit: exitUsage},
		{name: "no URL", args: nil, exit: exitUsage},
		{name: "chain ends canceled", args: []string{dc + "?orderId=400"}, exit: exitOrderEnded},
		{name: "no such order", args: []string{dc + "?orderId=999"}, exit: exitNoSuchOrder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := m.run("", append([]string{"acme-url"}, tc.args...)...)
			code := 0
			if err != nil {
				code = exitCode(err)
			}
			if code != tc.exit {
				t.Fatalf("exit %d (%v), want %d\n%s", code, err, tc.exit, errOut)
			}
			if tc.exit != 0 {
				if out != "" {
					t.Errorf("a failure printed %q on stdout", out)
				}
				return
			}
			if want := tc.out + "\n"; out != want {
				t.Errorf("stdout %q\n want %q", out, want)
			}
			if errOut != tc.stderr {
				t.Errorf("stderr %q, want %q", errOut, tc.stderr)
			}
			if strings.Contains(out+errOut, key) {
				t.Error("the key was printed")
			}
		})
	}
	if b, err := os.ReadFile(renewal); err != nil || string(b) != string(certbotConf) {
		t.Errorf("the certbot renewal file changed: %v", err)
	}
	// The credentials from flags and a file, as for current.
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint := m.env["CERTORDER_URL"]
	m.env = map[string]string{}
	m.fails(exitUsage, "acme-url", dc+"?orderId=500")
	if out := m.ok("acme-url", "--url", endpoint, "--access-name", "acme", "--access-key-file", keyFile, dc+"?orderId=300"); out != dc+"?orderId=302\n" {
		t.Errorf("with flags: %q", out)
	}
	m.fails(exitCredentials, "acme-url", "--url", endpoint, "--access-name", "acme", "--access-key", "cok_wrong", dc+"?orderId=300")
	m.fails(exitUnreachable, "acme-url", "--url", "http://127.0.0.1:1/api/digicert/", "--access-name", "acme",
		"--access-key-file", keyFile, "--timeout", "2s", dc+"?orderId=300")
}

// The successor's status acme-url prints on stderr comes from the service:
// it is escaped (and bounded) by the rule every command uses.
func TestACMEURLEscapesStatus(t *testing.T) {
	t.Parallel()
	m, op, _ := acmeChainsWithOperator(t)
	const evil = "pending\x1b]0;PWNED\x07\x1b[2J"
	q, _ := json.Marshal(evil)
	doc := strings.ReplaceAll(unissuedOrderJSON(601, "EVIL"), `"EVIL"`, string(q))
	if out, errOut, err := op.run("["+storetest.OrderJSON(600, 0, "2099-01-01")+","+doc+"]",
		"admin", "order", "import", "--member", "acme", "-"); err != nil {
		t.Fatalf("import: %v %s %s", err, out, errOut)
	}
	op.ok("admin", "order", "renew", "600", "601")
	const dc = "https://one.digicert.com/mpki/api/v1/acme/v2/directory"
	out, errOut, err := m.run("", "acme-url", dc+"?orderId=600")
	if err != nil || out != dc+"?orderId=601\n" {
		t.Fatalf("%v: %q %q", err, out, errOut)
	}
	if want := `order 600 was renewed by 601 ("pending\x1b]0;PWNED\a\x1b[2J")` + "\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// serve refuses an ACME URL template it could not use, from the flag or
// the variable.
func TestServeACMEURLTemplate(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	for _, bad := range []string{"https://acme.example/directory?orderId=1", "http://acme.example/directory?orderId={orderId}"} {
		if msg := c.fails(exitUsage, "serve", "--acme-url-template", bad); !strings.Contains(msg, "--acme-url-template") {
			t.Errorf("%s: %s", bad, msg)
		}
	}
	c.env["CERTORDER_ACME_URL_TEMPLATE"] = "not a url {orderId}"
	c.fails(exitUsage, "serve")
}
