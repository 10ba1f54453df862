package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
)

// received is one webhook a receiver got.
type received struct {
	id, typ string
	data    map[string]any
	header  http.Header
	body    []byte
}

// receiver is a real HTTP receiver on loopback that verifies every webhook
// with the Standard Webhooks reference library (not certorder's own code)
// and answers with what answer says.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	secret  string
	got     []received
	bad     []string
	conns   int
	answer  func(r received, n int) int // status to answer the n-th (1-based) webhook with
	arrived chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{t: t, arrived: make(chan struct{}, 1000), answer: func(received, int) int { return 204 }}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	rc.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			rc.mu.Lock()
			rc.conns++
			rc.mu.Unlock()
		}
	}
	rc.srv.Start()
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	ref, err := standardwebhooks.NewWebhook(rc.secret)
	if err == nil {
		err = ref.Verify(body, r.Header)
	}
	got := received{id: r.Header.Get("webhook-id"), header: r.Header.Clone(), body: body}
	var ev struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err != nil {
		rc.bad = append(rc.bad, fmt.Sprintf("%v: %s", err, body))
	}
	got.typ, got.data = ev.Type, ev.Data
	rc.got = append(rc.got, got)
	answer := rc.answer
	n := len(rc.got)
	rc.mu.Unlock()
	w.WriteHeader(answer(got, n))
	rc.arrived <- struct{}{}
}

// wait waits until n webhooks have arrived in all, within 20 s.
func (rc *receiver) wait(n int) []received {
	rc.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		rc.mu.Lock()
		got, bad := append([]received(nil), rc.got...), append([]string(nil), rc.bad...)
		rc.mu.Unlock()
		if len(bad) > 0 {
			rc.t.Fatalf("webhooks the reference library refuses: %v", bad)
		}
		if len(got) >= n {
			return got
		}
		select {
		case <-rc.arrived:
		case <-deadline:
			rc.t.Fatalf("%d webhooks arrived, want %d", len(got), n)
		}
	}
}

func (rc *receiver) count() (webhooks, conns int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got), rc.conns
}

// addEndpoint adds an endpoint with the admin command and keeps its secret.
func (rc *receiver) addEndpoint(c *cli, member string, args ...string) string {
	rc.t.Helper()
	out := c.ok(append([]string{"admin", "webhook", "add", member, rc.srv.URL + "/hook", "--allow-private"}, args...)...)
	rc.mu.Lock()
	rc.secret = lastLine(out)
	rc.mu.Unlock()
	if !strings.HasPrefix(rc.secret, "whsec_") {
		rc.t.Fatalf("webhook add printed no secret on its last line:\n%s", out)
	}
	return strings.Fields(out)[1] // "endpoint <ID> added ..."
}

func webhookOrder(id int, status, validTill string) string {
	return fmt.Sprintf(`{"OrderId":%d,"certificate":{"common_name":"h%d.example.com","valid_till":%q},"status":%q,"order_valid_till":"2031-06-30"}`,
		id, id, validTill, status)
}

// Each event type is delivered once, signed so the reference library
// verifies it; bob's endpoint never hears of alice's orders; a 503 is
// retried with the same webhook-id and then no more; 410 disables.
func TestWebhookEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("over 5 s (a delivery retried on its schedule): not with -short")
	}
	t.Parallel()
	c := newStoreCLI(t, testdb.SQLite(t))
	for _, m := range []string{"alice", "bob"} {
		c.ok("admin", "member", "add", m)
	}
	alice, bob := newReceiver(t), newReceiver(t)
	alice.addEndpoint(c, "alice")
	bobEndpoint := bob.addEndpoint(c, "bob")
	soon := time.Now().UTC().AddDate(0, 0, 5).Format("2006-01-02")
	if _, errOut, err := c.run("["+webhookOrder(1, "issued", "2030-01-01")+","+webhookOrder(2, "issued", "2031-01-01")+","+
		webhookOrder(3, "issued", soon)+"]", "admin", "order", "import", "--member", "alice", "-"); err != nil {
		t.Fatal(err, errOut)
	}
	if _, errOut, err := c.run(webhookOrder(9, "issued", soon), "admin", "order", "import", "--member", "bob", "-"); err != nil {
		t.Fatal(err, errOut)
	}
	// Bob's receiver answers 503 to its first webhook, then 204; then 410.
	bob.answer = func(_ received, n int) int {
		switch n {
		case 1:
			return 503
		case 2:
			return 204
		}
		return 410
	}

	startServe(t, c, "--webhook-allow-private")
	alice.wait(1) // order 3 expires in 5 days: order.expiring at once
	c.ok("admin", "order", "renew", "1", "2")
	if _, errOut, err := c.run(webhookOrder(2, "revoked", "2031-01-01"), "admin", "order", "import", "--member", "alice", "-"); err != nil {
		t.Fatal(err, errOut)
	}
	got := alice.wait(3)
	want := map[string]string{
		"order.expiring":       fmt.Sprintf(`{"days_remaining":5,"next_step":"reissue","order_id":3,"order_valid_till":"2031-06-30","valid_till":%q}`, soon),
		"order.renewed":        `{"order_id":1,"renewed_order_id":2}`,
		"order.status_changed": `{"order_id":2,"previous_status":"issued","status":"revoked"}`,
	}
	for _, r := range got {
		data, _ := json.Marshal(r.data)
		if want[r.typ] != string(data) {
			t.Errorf("%s: data %s, want %s", r.typ, data, want[r.typ])
		}
		delete(want, r.typ)
	}
	if len(want) != 0 || len(got) != 3 {
		t.Fatalf("alice's events: %d, missing %v", len(got), want)
	}

	// Bob: order 9 expires too; 503, then the same webhook-id again: 204.
	b := bob.wait(2)
	if b[0].id != b[1].id || b[0].typ != "order.expiring" || b[0].data["order_id"] != float64(9) {
		t.Fatalf("bob's retry: %+v / %+v", b[0], b[1])
	}
	// Until the 204 is recorded (the endpoint's last success): the delivery
	// is then done, and the worker never takes it again.
	lastSuccess := regexp.MustCompile(`(?m)^` + bobEndpoint + `\s.*\d\dZ\s*$`)
	poll.Until(t, 20*time.Second, "bob's 204 recorded", func() bool {
		return lastSuccess.MatchString(c.ok("admin", "webhook", "list", "bob"))
	})
	if n, _ := bob.count(); n != 2 {
		t.Fatalf("bob got %d webhooks, want 2: no further delivery after the 2xx", n)
	}
	for _, r := range alice.wait(3) {
		if id := r.data["order_id"]; id == float64(9) {
			t.Fatalf("alice heard of bob's order: %+v", r)
		}
	}
	// 410 Gone disables the endpoint.
	if _, errOut, err := c.run(webhookOrder(9, "revoked", soon), "admin", "order", "import", "--member", "bob", "-"); err != nil {
		t.Fatal(err, errOut)
	}
	bob.wait(3)
	if !poll.Within(10*time.Second, func() bool {
		return strings.Contains(c.ok("admin", "webhook", "list", "bob"), "disabled: the endpoint answered 410 Gone")
	}) {
		t.Fatalf("410 did not disable endpoint %s:\n%s", bobEndpoint, c.ok("admin", "webhook", "list", "bob"))
	}
	if out := c.ok("admin", "audit", "--member", "bob"); !strings.Contains(out, "webhook_add") {
		t.Errorf("the audit trail lacks the endpoint's creation:\n%s", out)
	}
}

// Without --webhook-allow-private, an endpoint on loopback is never
// connected to: the address is checked on every connection.
func TestWebhookNoPrivateAddresses(t *testing.T) {
	t.Parallel()
	c := newStoreCLI(t, testdb.SQLite(t))
	c.ok("admin", "member", "add", "alice")
	rc := newReceiver(t)
	id := rc.addEndpoint(c, "alice") // the operator allowed it; serve does not
	if _, errOut, err := c.run("["+webhookOrder(1, "issued", "2030-01-01")+","+webhookOrder(2, "issued", "2030-01-01")+"]",
		"admin", "order", "import", "--member", "alice", "-"); err != nil {
		t.Fatal(err, errOut)
	}
	startServe(t, c)
	c.ok("admin", "order", "renew", "1", "2")
	if !poll.Within(10*time.Second, func() bool { return strings.Contains(c.ok("admin", "webhook", "list", "alice"), "failing since") }) {
		t.Fatalf("endpoint %s not failing:\n%s", id, c.ok("admin", "webhook", "list", "alice"))
	}
	if n, conns := rc.count(); n != 0 || conns != 0 {
		t.Fatalf("a loopback endpoint got %d webhooks over %d connections", n, conns)
	}
}

// serve killed while a delivery is in flight: after a restart the event is
// delivered, with the same webhook-id.
func TestWebhookSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs certorder as a process: not with -short")
	}
	t.Parallel()
	db := testdb.SQLite(t)
	c := newStoreCLI(t, db)
	c.ok("admin", "member", "add", "alice")
	rc := newReceiver(t)
	rc.addEndpoint(c, "alice")
	hang := make(chan struct{})
	rc.answer = func(_ received, n int) int {
		if n == 1 {
			<-hang // the first attempt never gets its answer
		}
		return 204
	}
	defer close(hang)
	if _, errOut, err := c.run("["+webhookOrder(1, "issued", "2030-01-01")+","+webhookOrder(2, "issued", "2030-01-01")+"]",
		"admin", "order", "import", "--member", "alice", "-"); err != nil {
		t.Fatal(err, errOut)
	}
	bin := buildBinary(t)
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--webhook-allow-private", "--webhook-timeout", "1s"}
	p := startProcess(t, bin, args...)
	c.ok("admin", "order", "renew", "1", "2")
	var first received
	poll.Until(t, 10*time.Second, "the first attempt", func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if len(rc.got) == 0 {
			return false
		}
		first = rc.got[0]
		return true
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	startProcess(t, bin, args...)
	got := rc.wait(2) // after the lease (timeout + 5 s: 6 s)
	if got[1].id != first.id || got[1].typ != "order.renewed" {
		t.Fatalf("after the restart: %+v, first %+v", got[1], first)
	}
}

// Two serve instances on one PostgreSQL deliver every event exactly once.
func TestWebhookTwoInstances(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	c := newStoreCLI(t, dsn)
	c.ok("admin", "member", "add", "alice")
	rc := newReceiver(t)
	rc.addEndpoint(c, "alice", "--events", "order.status_changed")
	const n = 30
	var orders []string
	for i := 1; i <= n; i++ {
		orders = append(orders, webhookOrder(i, "issued", "2030-01-01"))
	}
	if _, errOut, err := c.run("["+strings.Join(orders, ",")+"]", "admin", "order", "import", "--member", "alice", "-"); err != nil {
		t.Fatal(err, errOut)
	}
	bin := buildBinary(t)
	var metrics []string
	for range 2 {
		addr := freeAddr(t)
		startProcess(t, bin, "serve", "--addr", "127.0.0.1:0", "--db", dsn, "--webhook-allow-private", "--metrics-addr", addr)
		metrics = append(metrics, addr)
	}
	for i := 1; i <= n; i++ { // one status change per order, one import each
		if _, errOut, err := c.run(webhookOrder(i, "revoked", "2030-01-01"), "admin", "order", "import", "--member", "alice", "-"); err != nil {
			t.Fatal(err, errOut)
		}
	}
	rc.wait(n)
	for _, addr := range metrics { // room for a double delivery to show
		awaitRounds(t, addr, "webhooks")
	}
	got := rc.wait(n)
	seen := map[string]int{}
	orderSeen := map[float64]int{}
	for _, r := range got {
		seen[r.id]++
		orderSeen[r.data["order_id"].(float64)]++
	}
	if len(got) != n || len(seen) != n || len(orderSeen) != n {
		t.Fatalf("%d webhooks, %d distinct ids, %d distinct orders; want %d of each", len(got), len(seen), len(orderSeen), n)
	}
}

// admin webhook add reads CERTORDER_WEBHOOK_ALLOW_PRIVATE as serve does
// (applyEnv): true allows a loopback endpoint, a value that is not a
// boolean is a usage error, and without it the address is refused.
func TestWebhookAddAllowPrivateFromEnv(t *testing.T) {
	t.Parallel()
	c := newStoreCLI(t, testdb.SQLite(t))
	c.ok("admin", "member", "add", "alice")
	add := []string{"admin", "webhook", "add", "alice", "http://127.0.0.1:9/hook"}
	c.fails(exitUsage, add...)
	c.env["CERTORDER_WEBHOOK_ALLOW_PRIVATE"] = "maybe"
	if msg := c.fails(exitUsage, add...); !strings.Contains(msg, "CERTORDER_WEBHOOK_ALLOW_PRIVATE") {
		t.Errorf("a value that is not a boolean: %s", msg)
	}
	c.env["CERTORDER_WEBHOOK_ALLOW_PRIVATE"] = "true"
	if out := c.ok(add...); !strings.Contains(out, "endpoint 1 added for member alice") {
		t.Errorf("with the variable set: %s", out)
	}
}
