package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/stores"
)

// admin member keys NAME on|off sets the member's self-service switch.
func TestAdminMemberKeys(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		c := newStoreCLI(t, dsn)
		c.ok("admin", "member", "add", "alice")
		if out := c.ok("admin", "member", "keys", "alice", "off"); !strings.Contains(out, "alice: self-service keys on the web page off") {
			t.Errorf("off: %s", out)
		}
		off := func() bool {
			s, err := stores.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			m, err := s.FindMember(context.Background(), "alice")
			if err != nil {
				t.Fatal(err)
			}
			return m.SelfServiceKeysOff
		}
		if !off() {
			t.Fatal("alice's self-service keys still on")
		}
		if out := c.ok("admin", "member", "list"); !regexp.MustCompile(`(?m)^NAME\s+STATUS\s+WEB KEYS\s.*\n^alice\s+enabled\s+off\s`).MatchString(out) {
			t.Errorf("member list does not show alice's keys off:\n%s", out)
		}
		c.ok("admin", "member", "keys", "alice", "on")
		if off() {
			t.Fatal("alice's self-service keys still off")
		}
		c.fails(exitUsage, "admin", "member", "keys", "alice", "maybe")
		c.fails(exitUsage, "admin", "member", "keys", "alice")
		c.fails(exitFailure, "admin", "member", "keys", "nobody", "off")
	})
}

// CERTORDER_MEMBER_KEYS=false (--member-keys=false) reaches the web page:
// the keys page refuses changes.
func TestServeMemberKeysOff(t *testing.T) {
	t.Parallel()
	c := newStoreCLI(t, testdb.SQLite(t))
	c.ok("admin", "member", "add", "alice")
	key := lastLine(c.ok("admin", "key", "create", "alice"))
	c.env["CERTORDER_MEMBER_KEYS"] = "false"
	endpoint, _ := startServe(t, c)
	base := strings.TrimSuffix(endpoint, "api/digicert/")

	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	get := func(path string) string {
		resp, err := hc.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	form := csrf.FindStringSubmatch(get("signin"))
	if form == nil {
		t.Fatal("no sign-in form")
	}
	resp, err := hc.PostForm(base+"signin", url.Values{"csrf": {form[1]}, "name": {"alice"}, "key": {key}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	keys := get("keys")
	token := csrf.FindStringSubmatch(keys)
	if token == nil || !strings.Contains(keys, "turned off for your account") || strings.Contains(keys, `action="/keys"`) {
		t.Fatalf("keys page with --member-keys=false:\n%s", keys)
	}
	resp, err = hc.PostForm(base+"keys", url.Values{"csrf": {token[1]}, "label": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("creating a key with --member-keys=false: %d", resp.StatusCode)
	}
}
