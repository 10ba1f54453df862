package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
)

// post sends an API request and returns the status and the body.
func post(t *testing.T, endpoint, body string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(endpoint, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func request(name, key, action, orderID string) string {
	b := `{"AccessName":"` + name + `","AccessKey":"` + key + `","action":"` + action + `"`
	if orderID != "" {
		b += `,"orderId":` + orderID
	}
	return b + "}"
}

// Moving between stores loses nothing: SQLite -> PostgreSQL -> SQLite, and
// every export reads the same.
func TestExportRestoreAcrossStores(t *testing.T) {
	t.Parallel()
	pg := testdb.Postgres(t)
	src := newCLI(t, testdb.SQLite(t))
	startServe(t, src, "--demo") // a member, a key, orders and renewals
	src.ok("admin", "member", "add", "other")
	src.ok("admin", "member", "disable", "other")
	first := src.ok("admin", "export")
	if strings.Count(first, "\n") < 7 || strings.Contains(first, "cok_") {
		t.Fatalf("export:\n%s", first)
	}

	// A search_path that names no existing schema: what to create.
	missing := newCLI(t, strings.Replace(pg, "search_path=", "search_path=missing_", 1))
	if msg := missing.fails(exitFailure, "admin", "restore", "-"); !regexp.MustCompile(
		`no schema of the DSN's search_path=missing_certorder_test_\w+ exists; create it \(CREATE SCHEMA "missing_certorder_test_\w+"\)`).MatchString(msg) {
		t.Errorf("restore into a missing schema: %s", msg)
	}

	dst := newCLI(t, pg)
	if _, errOut, err := dst.run(first, "admin", "restore", "-"); err != nil {
		t.Fatalf("restore into PostgreSQL: %v %s", err, errOut)
	}
	if second := dst.ok("admin", "export"); second != first {
		t.Fatalf("PostgreSQL export differs:\n%s\n---\n%s", first, second)
	}
	back := newCLI(t, testdb.SQLite(t))
	if _, errOut, err := back.run(dst.ok("admin", "export"), "admin", "restore", "-"); err != nil {
		t.Fatalf("restore into SQLite: %v %s", err, errOut)
	}
	if third := back.ok("admin", "export"); third != first {
		t.Fatalf("SQLite export after the round trip differs:\n%s\n---\n%s", first, third)
	}
	// A restore into a store that holds data is refused.
	if _, _, err := back.run(first, "admin", "restore", "-"); err == nil {
		t.Fatal("restore into a non-empty store succeeded")
	}
	back.ok("admin", "migrate")
}

// Two serve processes on one PostgreSQL: a key revoked or a member disabled
// is refused by both on the next request, other changes are seen within moments.
func TestTwoInstances(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	admin := newCLI(t, dsn)
	bin := buildBinary(t)
	// One instance names a password in the DSN (the server trusts local
	// connections and ignores it): the log must not show it.
	const password = "pw-in-the-dsn-7f3a"
	pa := startProcess(t, bin, "serve", "--addr", "127.0.0.1:0", "--db", testdb.WithParam(dsn, "password", password))
	a := pa.endpoint
	b := startProcess(t, bin, "serve", "--addr", "127.0.0.1:0", "--db", dsn).endpoint
	defer func() {
		if strings.Contains(pa.log.String(), password) {
			t.Errorf("the log shows the DSN's password:\n%s", pa.log.String())
		}
	}()
	admin.ok("admin", "member", "add", "alice")
	admin.ok("admin", "member", "add", "bob")
	aliceKey := lastLine(admin.ok("admin", "key", "create", "alice"))
	bobKey := lastLine(admin.ok("admin", "key", "create", "bob"))
	if _, errOut, err := admin.run(orderJSON(1)+orderJSON(2), "admin", "order", "import", "--member", "alice", "-"); err == nil {
		t.Fatalf("two objects without an array imported: %s", errOut)
	}
	if _, errOut, err := admin.run("["+orderJSON(1)+","+orderJSON(2)+"]", "admin", "order", "import", "--member", "alice", "-"); err != nil {
		t.Fatalf("import: %v %s", err, errOut)
	}
	both := func(body string, wantStatus int, wantBody string) {
		t.Helper()
		for _, endpoint := range []string{a, b} {
			status, got := post(t, endpoint, body)
			if status != wantStatus || !strings.Contains(got, wantBody) {
				t.Fatalf("%s: %d %s, want %d %s", endpoint, status, got, wantStatus, wantBody)
			}
		}
	}
	both(request("alice", aliceKey, "Auth", ""), 200, "Authenticated")
	both(request("alice", aliceKey, "RenewCheck", "1"), 404, "Error(132)")

	// A change that takes no access away is seen within moments (the
	// instances learn of it by notification); the commands that take access
	// away wait until every instance has applied them (below).
	admin.ok("admin", "order", "renew", "1", "2")
	poll.Until(t, 10*time.Second, "both instances answer the renewal", func() bool {
		for _, endpoint := range []string{a, b} {
			if status, got := post(t, endpoint, request("alice", aliceKey, "RenewCheck", "1")); status != 200 ||
				got != `{"orderId":1,"renewed_orderId":2}` {
				return false
			}
		}
		return true
	})

	admin.ok("admin", "key", "revoke", aliceKey[4:16])
	both(request("alice", aliceKey, "Auth", ""), 401, "Error(111)")

	both(request("bob", bobKey, "Auth", ""), 200, "Authenticated")
	admin.ok("admin", "member", "disable", "bob")
	both(request("bob", bobKey, "Auth", ""), 401, "Error(111)")
}

func orderJSON(id int) string {
	return `{"OrderId":` + strconv.Itoa(id) + `,"certificate":{"common_name":"h.example.com","valid_till":"2030-01-01"},"status":"issued"}`
}

// proxy forwards TCP to PostgreSQL until cut, so a test can take the
// database away from one server without stopping it for everyone else.
type proxy struct {
	t         *testing.T
	ln        net.Listener
	addr      string
	target    string
	mu        sync.Mutex
	conns     []net.Conn
	blackhole bool // accept, but forward nothing: a database that stops answering
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, addr: ln.Addr().String(), target: target}
	go p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		hang := p.blackhole
		p.mu.Unlock()
		if hang {
			continue // hold the connection open and say nothing
		}
		go func() {
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			io.Copy(c, up)
			c.Close()
		}()
	}
}

// cut stops listening and drops every connection: the database is gone.
func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// restore listens again on the same address, forwarding, or hanging if blackhole.
func (p *proxy) restore(blackhole bool) {
	var ln net.Listener
	var err error
	// The port was just closed; the OS may need a moment.
	if !poll.Within(5*time.Second, func() bool { ln, err = net.Listen("tcp", p.addr); return err == nil }) {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.blackhole = ln, blackhole
	p.mu.Unlock()
	go p.serve(ln)
}

// The database goes away: requests fail fast with the unavailable error
// and HTTP 503, and the server recovers by itself when it is back.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	u.Host = p.addr
	c := newCLI(t, u.String())
	endpoint, stdout := startServe(t, c, "--demo", "--store-timeout", "1s")
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]
	info := request("demo", key, "OrderInfo", "10003")
	if status, got := post(t, endpoint, info); status != 200 {
		t.Fatalf("before the outage: %d %s", status, got)
	}
	unavailable := `{"error_message":"Error(150) service is unavailable."}`
	expectOutage := func(what string) {
		t.Helper()
		// The cache answers until the instance notices that its
		// notification connection is gone: at once when it is cut, within
		// the heartbeat's timeout when the database goes silent.
		poll.Until(t, 10*time.Second, what+": 503", func() bool {
			status, _ := post(t, endpoint, info)
			return status == 503
		})
		for range 3 {
			start := time.Now()
			status, got := post(t, endpoint, info)
			if took := time.Since(start); status != 503 || got != unavailable || took > 3*time.Second {
				t.Fatalf("%s: %d %s after %v; want a fast 503 %s", what, status, got, took, unavailable)
			}
		}
	}
	p.cut()
	expectOutage("database refused")

	p.restore(true) // the database accepts connections and never answers
	expectOutage("database silent")

	p.cut()
	p.restore(false)
	var status int
	var got string
	if !poll.Within(15*time.Second, func() bool {
		status, got = post(t, endpoint, info)
		return status == 200 && strings.Contains(got, `"OrderId":10003`)
	}) {
		t.Fatalf("no recovery after the database came back: %d %s", status, got)
	}
}
