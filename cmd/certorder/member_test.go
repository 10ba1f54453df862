package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
)

// memberCLI is a member's shell: the demo service's endpoint and
// credentials in CERTORDER_URL, CERTORDER_ACCESS_NAME and CERTORDER_ACCESS_KEY.
func memberCLI(t *testing.T) (*cli, string) {
	server := newCLI(t, testdb.SQLite(t))
	endpoint, stdout := startServe(t, server, "--demo")
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]
	m := newCLI(t, "")
	m.env["CERTORDER_URL"] = endpoint
	m.env["CERTORDER_ACCESS_NAME"] = "demo"
	m.env["CERTORDER_ACCESS_KEY"] = key
	return m, key
}

func TestMemberCommands(t *testing.T) {
	t.Parallel()
	m, key := memberCLI(t)
	if out := m.ok("auth"); out != "credentials accepted\n" {
		t.Fatalf("auth: %q", out)
	}
	if out := m.ok("auth", "--json"); out != `{"message":"Authenticated"}`+"\n" {
		t.Fatalf("auth --json: %q", out)
	}
	info := m.ok("info", "10001")
	for _, re := range []string{`Order:\s+10001`, `Common name:\s+shop.example.com`, `Status:\s+issued \(certificate expired\)`,
		`Valid till:\s+\d{4}-\d\d-\d\d \(expired 20 days ago\)`, `Renewal:\s+renewed by order 10002`} {
		if !regexp.MustCompile(re).MatchString(info) {
			t.Errorf("info lacks %s:\n%s", re, info)
		}
	}
	if out := m.ok("info", "10004", "--json"); !strings.HasPrefix(out, `{"OrderId":10004,`) || !strings.Contains(out, `"user_id":7002`) {
		t.Errorf("info --json is not the service's answer: %s", out)
	}
	if out := m.ok("renew-check", "10001"); out != "order 10001 was renewed by order 10002\n" {
		t.Errorf("renew-check: %q", out)
	}
	if out := m.ok("renew-check", "--json", "10002"); out != `{"orderId":10002,"renewed_orderId":10003}`+"\n" {
		t.Errorf("renew-check --json: %q", out)
	}
	cur := m.ok("current", "10001")
	for _, re := range []string{`Renewal chain:\s+10001 -> 10002 -> 10003`, `Current order:\s+10003`, `\(\d+ days remaining\)`, `Renewal:\s+not renewed`} {
		if !regexp.MustCompile(re).MatchString(cur) {
			t.Errorf("current lacks %s:\n%s", re, cur)
		}
	}
	if out := m.ok("current", "10001", "--id"); out != "10003\n" {
		t.Errorf("current --id: %q", out)
	}
	if out := m.ok("current", "10002", "--json"); !strings.HasPrefix(out, `{"OrderId":10003,`) {
		t.Errorf("current --json: %s", out)
	}

	// Exit codes, and messages that say what the service said.
	if msg := m.fails(exitNoSuchOrder, "info", "424242"); !strings.Contains(msg, "Error(131) orderId is failed.") {
		t.Errorf("no such order: %s", msg)
	}
	m.fails(exitNoSuchOrder, "current", "424242")
	m.fails(exitNotRenewed, "renew-check", "10003")
	m.fails(exitUsage, "info", "abc")
	m.fails(exitUsage, "info")
	m.env["CERTORDER_ACCESS_KEY"] = key + "x"
	if msg := m.fails(exitCredentials, "auth"); !strings.Contains(msg, "AccessName is failed.") || strings.Contains(msg, key) {
		t.Errorf("wrong key: %s", msg)
	}

	// The key from a file, the endpoint from a flag.
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.env["CERTORDER_ACCESS_KEY"] = ""
	m.fails(exitUsage, "auth")
	url := m.env["CERTORDER_URL"]
	m.env["CERTORDER_URL"] = ""
	m.ok("auth", "--access-key-file", keyFile, "--url", url)

	// Nobody listening: network trouble.
	m.fails(exitUnreachable, "auth", "--access-key-file", keyFile, "--url", "http://127.0.0.1:1/api/digicert/", "--timeout", "2s")
}
