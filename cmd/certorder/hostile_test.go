package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
)

// importOrders imports orders first..last of member with status, in one call.
func importOrders(t *testing.T, c *cli, member string, first, last int, status string) {
	t.Helper()
	var orders []string
	for i := first; i <= last; i++ {
		orders = append(orders, webhookOrder(i, status, "2030-01-01"))
	}
	if _, errOut, err := c.run("["+strings.Join(orders, ",")+"]", "admin", "order", "import", "--member", member, "-"); err != nil {
		t.Fatal(err, errOut)
	}
}

// fairnessBound is N of docs/OPERATIONS.md ("Webhooks"): with one
// endpoint hanging and hundreds of its events queued, another member's
// event is delivered within this long.
const fairnessBound = 3 * time.Second

// One member's endpoint hangs with 300 events queued for it: another
// member's event still arrives within fairnessBound (before the fix it
// waited behind batches of 100 attempts of 10 s, 8 at a time).
func TestWebhookFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test (a member's hanging endpoint holding the places): not with -short")
	}
	t.Parallel()
	db := testdb.SQLite(t)
	c := newStoreCLI(t, db)
	c.ok("admin", "member", "add", "hog")
	c.ok("admin", "member", "add", "alice")
	hog := newReceiver(t)
	hog.addEndpoint(c, "hog")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the receiver closes
	hog.answer = func(received, int) int { <-release; return 204 }
	alice := newReceiver(t)
	alice.addEndpoint(c, "alice", "--events", "order.status_changed")
	importOrders(t, c, "hog", 1, 300, "issued")
	importOrders(t, c, "hog", 1, 300, "revoked") // 300 events for the hanging endpoint
	importOrders(t, c, "alice", 1001, 1001, "issued")

	p := startProcess(t, buildBinary(t), "serve", "--addr", "127.0.0.1:0", "--db", db, "--webhook-allow-private")
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(p.log.String())
			out, _, _ := c.run("", "admin", "webhook", "list", "hog")
			t.Log(out)
			o, _ := exec.Command("sqlite3", db, "select state, attempts, last_class, last_error, count(*) from webhook_deliveries group by 1,2,3,4").CombinedOutput()
			t.Log(string(o))
		}
	})
	// The worker is at the hanging endpoint (whose handler never returns,
	// so hog.wait, which wakes on answers, cannot tell).
	poll.Until(t, 20*time.Second, "the worker at the hanging endpoint", func() bool { n, _ := hog.count(); return n > 0 })
	start := time.Now()
	importOrders(t, c, "alice", 1001, 1001, "revoked")
	got := alice.wait(1)
	delay := time.Since(start)
	t.Logf("alice's event arrived %v after the change, with the hog's endpoint hanging", delay.Round(time.Millisecond))
	if got[0].typ != "order.status_changed" || delay > fairnessBound {
		t.Fatalf("alice's %s arrived after %v, want within %v", got[0].typ, delay, fairnessBound)
	}
	if n, _ := hog.count(); n > 8 {
		t.Errorf("%d attempts in flight at once to one hanging endpoint", n)
	}
}

// manyHangingBound is the bound of docs/OPERATIONS.md ("Webhooks") with
// the defaults, for up to 31 members whose endpoints hang (the issue asks
// for 10 s with 16): the poll (1 s) and one attempt's timeout (5 s) for a
// place to come free, which goes to the member waiting its turn.
const manyHangingBound = 10 * time.Second

// 16 members each with 2 endpoints that hang and 15 events queued for
// them (480 deliveries, more than enough to hold all 32 places): another
// member's event still arrives within manyHangingBound. The members'
// events come in four groups, a poll apart, as events come over time: so
// the places come free a few at a time, not all at once. Before fair
// queuing, each place that came free went to the member with the oldest
// due delivery, always one of theirs: the event waited 52.9 s.
func TestWebhookFairnessManyHanging(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test (480 deliveries to 16 members' hanging endpoints): not with -short")
	}
	t.Parallel()
	const hogs, endpoints, events, groups = 16, 2, 15, 4
	db := testdb.SQLite(t)
	c := newStoreCLI(t, db)
	var hanging []*receiver
	for m := range hogs {
		name := fmt.Sprintf("hog%d", m)
		c.ok("admin", "member", "add", name)
		for range endpoints {
			rc := newReceiver(t)
			rc.addEndpoint(c, name, "--events", "order.status_changed")
			hanging = append(hanging, rc)
		}
		importOrders(t, c, name, m*100+1, m*100+events, "issued")
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the receivers close
	for _, rc := range hanging {
		rc.answer = func(received, int) int { <-release; return 204 }
	}
	c.ok("admin", "member", "add", "alice")
	alice := newReceiver(t)
	alice.addEndpoint(c, "alice", "--events", "order.status_changed")
	importOrders(t, c, "alice", 5001, 5001, "issued")

	p := startProcess(t, buildBinary(t), "serve", "--addr", "127.0.0.1:0", "--db", db, "--webhook-allow-private")
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(p.log.String())
		}
	})
	inFlight := func() int {
		n := 0
		for _, rc := range hanging {
			got, _ := rc.count()
			n += got
		}
		return n
	}
	for g := range groups {
		for m := g * hogs / groups; m < (g+1)*hogs/groups; m++ {
			importOrders(t, c, fmt.Sprintf("hog%d", m), m*100+1, m*100+events, "revoked")
		}
		// The group's attempts have started (at the worker's next poll):
		// the next group's start a poll later.
		want := (g + 1) * 32 / groups
		poll.Until(t, 30*time.Second, fmt.Sprintf("%d attempts at the hanging endpoints", want), func() bool { return inFlight() >= want })
	}
	start := time.Now()
	importOrders(t, c, "alice", 5001, 5001, "revoked")
	select {
	case <-alice.arrived:
	case <-time.After(90 * time.Second):
		t.Fatalf("alice's event had not arrived after 90 s with %d members' endpoints hanging", hogs)
	}
	delay := time.Since(start)
	t.Logf("alice's event arrived %v after the change, with %d members' %d endpoints hanging (%d attempts made to them)",
		delay.Round(time.Millisecond), hogs, len(hanging), inFlight())
	if got := alice.wait(1); got[0].typ != "order.status_changed" || delay > manyHangingBound {
		t.Fatalf("alice's %s arrived after %v, want within %v", got[0].typ, delay, manyHangingBound)
	}
}

// Two serve instances on one PostgreSQL and slow receivers (0.7 s an
// answer, --webhook-timeout 2s, so a lease of 7 s): every one of 96
// events is delivered exactly once, each with its own webhook-id. Before
// the fix an instance claimed 100 at once, sent 8 at a time (8.4 s), and
// the other instance took the rest again when the lease ran out.
func TestWebhookTwoInstancesSlowReceiver(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	c := newStoreCLI(t, dsn)
	const members, each = 4, 24
	var rcs []*receiver
	for m := range members {
		name := fmt.Sprintf("m%d", m)
		c.ok("admin", "member", "add", name)
		rc := newReceiver(t)
		rc.addEndpoint(c, name, "--events", "order.status_changed")
		// The slow receiver: 0.7 s an answer, 1.3 s short of the timeout
		// (2 s), so that no attempt times out and is sent again (with a 1 s
		// timeout, one did at load 9: a duplicate, as at-least-once
		// delivery allows).
		rc.answer = func(received, int) int { time.Sleep(700 * time.Millisecond); return 204 }
		rcs = append(rcs, rc)
		importOrders(t, c, name, m*100+1, m*100+each, "issued")
		importOrders(t, c, name, m*100+1, m*100+each, "revoked")
	}
	bin := buildBinary(t)
	for range 2 {
		startProcess(t, bin, "serve", "--addr", "127.0.0.1:0", "--db", dsn, "--webhook-allow-private", "--webhook-timeout", "2s")
	}
	start := time.Now()
	for _, rc := range rcs {
		rc.wait(each)
	}
	t.Logf("%d events delivered by two instances in %v", members*each, time.Since(start).Round(time.Millisecond))
	// A second delivery would come once a lease (7 s) ran out: watch that long.
	deadline := time.After(8 * time.Second)
	for watching := true; watching; {
		select {
		case <-rcs[0].arrived:
		case <-rcs[1].arrived:
		case <-rcs[2].arrived:
		case <-rcs[3].arrived:
		case <-deadline:
			watching = false
		}
	}
	total := 0
	for m, rc := range rcs {
		got := rc.wait(each)
		seen := map[string]int{}
		for _, r := range got {
			seen[r.id]++
		}
		total += len(got)
		if len(got) != each || len(seen) != each {
			t.Errorf("member m%d: %d deliveries of %d distinct webhook-ids, want %d of each", m, len(got), len(seen), each)
		}
	}
	t.Logf("%d deliveries of %d events", total, members*each)
}

// With the process limited to 128 descriptors, 200 idle connections from
// 127.0.0.2 do not keep 127.0.0.1 from being served: beyond
// --max-conns-per-ip (8 here) they are closed at once, and counted.
// Before the cap, accept failed for everyone once the descriptors ran out.
func TestConnsPerIP(t *testing.T) {
	t.Parallel()
	// The admitted 8 are kept open for the test (the header timeout, 5 s by
	// default, closed one on a loaded machine while the 200 were still being
	// dialled, and the next was admitted: a close the cap did not count).
	p, addr, metricsAddr := serveWithin(t, 128, "--max-conns-per-ip", "8", "--read-header-timeout", "1m")
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 200 {
		c, err := dialer.Dial("tcp", addr)
		if err != nil {
			break // the listen queue is full: enough
		}
		conns = append(conns, c)
	}
	// Those over the cap are closed by the server: a read ends at once.
	var closed, open atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
				open.Add(1)
			} else {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	if open.Load() > 8 {
		t.Errorf("%d idle connections of %d from 127.0.0.2 stay open, want at most 8", open.Load(), len(conns))
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("127.0.0.1 is not served: %v\n%s", err, p.log.String())
	}
	resp.Body.Close()
	resp, err = client.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`(?m)^certorder_connections_refused_total\{reason="per_address"\} (\d+)`).FindStringSubmatch(string(body))
	if m == nil || m[1] != strconv.FormatInt(closed.Load(), 10) {
		t.Errorf("certorder_connections_refused_total: %v, want %d", m, closed.Load())
	}
	t.Logf("%d connections from 127.0.0.2: %d closed by the cap, %d open; 127.0.0.1 served", len(conns), closed.Load(), open.Load())
}

// With the process limited to 256 descriptors, 8 addresses (127.0.0.2 to
// 127.0.0.9) each holding 64 idle connections (their per-address cap) do
// not make accept fail, and a ninth address is answered: the connections
// are kept within the budget (256 less a reserve of 128), the one idle
// longest closed to admit a new one. Before the budget, accept failed with
// EMFILE and the ninth address timed out.
func TestConnBudget(t *testing.T) {
	t.Parallel()
	p, addr, metricsAddr := serveWithin(t, 256)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for host := 2; host <= 9; host++ {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(host))}, Timeout: 2 * time.Second}
		for range server.DefaultMaxConnsPerIP {
			c, err := dialer.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("dialling from 127.0.0.%d: %v", host, err)
			}
			conns = append(conns, c)
		}
	}
	ninth := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 10)}}).DialContext}}
	for i := range 3 {
		resp, err := ninth.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("127.0.0.10, try %d: %v\n%s", i+1, err, p.log.String())
		}
		resp.Body.Close()
		ninth.CloseIdleConnections()
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	closed := regexp.MustCompile(`(?m)^certorder_connections_idle_closed_total (\d+)`).FindStringSubmatch(string(body))
	if closed == nil || closed[1] == "0" {
		t.Errorf("certorder_connections_idle_closed_total: %v", closed)
	}
	if log := p.log.String(); strings.Contains(log, "Accept error") || !strings.Contains(log, "max_conns=128 descriptor_limit=256") {
		t.Errorf("the log:\n%s", log)
	}
	t.Logf("%d idle connections from 8 addresses; 127.0.0.10 answered 3 of 3; idle connections closed: %s", len(conns), closed[1])
}

// A hostile CertCentral: endless status change pages, then a 100 MB
// answer, then a 50 MB error full of terminal escapes. Each sync ends
// with a clear error, the cursor kept, memory bounded; the error stored
// and printed is a short, printable excerpt without the key.
func TestSyncHostileUpstream(t *testing.T) {
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	if _, err := u.sim.Generate(20, 1); err != nil {
		t.Fatal(err)
	}
	c := syncCLI(t, testdb.SQLite(t), u)
	c.sync()
	cursor := c.ok("admin", "sync", "status")
	syncFails := func(what string) (string, uint64) {
		t.Helper()
		var out, errOut string
		var err error
		n := allocatedBy(func() {
			done := make(chan struct{})
			go func() { defer close(done); out, errOut, err = c.run("", "sync") }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: the sync still runs after 60 s", what)
			}
		})
		if exitCode(err) != exitFailure || !strings.HasPrefix(lastLine(out), "sync failed, cursor kept") {
			t.Fatalf("%s: %v\n%s%s", what, err, out, errOut)
		}
		all := out + errOut + err.Error()
		if strings.Contains(all, simKey) || strings.ContainsAny(all, "\x1b\x07") {
			t.Fatalf("%s: the key or a terminal escape in the output", what)
		}
		t.Logf("%s: %d MB allocated; %v", what, n>>20, err)
		return err.Error(), n
	}
	u.sim.SetHostile(digicerttest.Hostile{EndlessPages: true})
	if msg, n := syncFails("endless status change pages"); !strings.Contains(msg, "more than 100000 status changes") || n > 512<<20 {
		t.Errorf("endless pages: %d MB, %s", n>>20, msg)
	}
	u.sim.SetHostile(digicerttest.Hostile{HugeAnswer: 100 << 20})
	if msg, n := syncFails("a 100 MB answer"); !strings.Contains(msg, "over 8388608 bytes") || n > 128<<20 {
		t.Errorf("a huge answer: %d MB, %s", n>>20, msg)
	}
	u.sim.SetHostile(digicerttest.Hostile{ErrorBody: 50 << 20})
	u.sim.FailNext(1, 400)
	if msg, _ := syncFails("a 50 MB error"); len(msg) > 2048 {
		t.Errorf("the error printed is %d bytes", len(msg))
	}
	st := c.ok("admin", "sync", "status")
	if len(st) > len(cursor)+4096 || strings.Contains(st, simKey) || strings.ContainsAny(st, "\x1b\x07") {
		t.Errorf("sync status after the hostile answers (%d bytes): %.500q", len(st), st)
	}
	if !strings.Contains(st, cursorLine(cursor)) {
		t.Errorf("the cursor moved:\nbefore\n%s\nafter\n%s", cursor, st)
	}
}

// Statuses from CertCentral full of terminal escapes, 40 distinct ones of
// 4 KB each: certorder sync and admin sync status print them escaped, the
// summary counts 20 of them by name (each cut short) and the rest as
// "other", and stays short. Before, the summary held them raw: 160 KB with
// the escapes in it, printed and stored in the run record.
func TestSyncHostileStatuses(t *testing.T) {
	t.Parallel()
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	if _, err := u.sim.Generate(40, 1); err != nil {
		t.Fatal(err)
	}
	for i, id := range u.sim.OrderIDs() {
		status := fmt.Sprintf("pending\x1b]0;PWNED\x07\x1b[2J%d%s", i, strings.Repeat("x", 4096))
		if err := u.sim.SetStatus(id, status, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	c := syncCLI(t, testdb.SQLite(t), u)
	summary, out := c.sync()
	st := c.ok("admin", "sync", "status")
	for name, text := range map[string]string{"sync": out, "admin sync status": st} {
		if strings.ContainsAny(text, "\x1b\x07") || len(text) > 16<<10 {
			t.Errorf("%s printed %d bytes: %.300q", name, len(text), text)
		}
	}
	if !strings.Contains(summary, `"pending\x1b]0;PWNED\a\x1b[2J`) || !strings.Contains(summary, ", other 20)") {
		t.Errorf("the summary: %.600q", summary)
	}
	t.Logf("the summary: %d bytes; admin sync status: %d bytes", len(summary), len(st))
}

// cursorLine is the line of admin sync status that gives the cursor.
func cursorLine(status string) string {
	for _, l := range strings.Split(status, "\n") {
		if strings.Contains(strings.ToLower(l), "cursor") {
			return l
		}
	}
	return status
}

// allocatedBy runs fn and returns the bytes the process allocated meanwhile.
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Terminal escapes in an order's fields reach no terminal through the
// human output of info, admin order list and admin order show --summary:
// they are escaped; --json and show's JSON stay exact.
func TestHumanOutputEscapesControls(t *testing.T) {
	t.Parallel()
	srv := newCLI(t, testdb.SQLite(t))
	endpoint, stdout := startServe(t, srv, "--demo")
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]
	const evil = "evil\x1b]0;pwned\x07\x1b[2J\u202eexample.com"
	q, _ := json.Marshal(evil)
	order := `{"OrderId":20001,"certificate":{"common_name":` + string(q) + `,"dns_names":[` + string(q) +
		`],"valid_till":"2030-01-01"},"status":"issued","product":{"name":"x\u001b[31m"}}`
	if _, errOut, err := srv.run(order, "admin", "order", "import", "--member", "demo", "-"); err != nil {
		t.Fatal(err, errOut)
	}
	m := newCLI(t, "")
	m.env["CERTORDER_URL"], m.env["CERTORDER_ACCESS_NAME"], m.env["CERTORDER_ACCESS_KEY"] = endpoint, "demo", key
	for name, out := range map[string]string{
		"info":                       m.ok("info", "20001"),
		"admin order list":           srv.ok("admin", "order", "list", "demo"),
		"admin order show --summary": srv.ok("admin", "order", "show", "20001", "--summary"),
	} {
		if strings.ContainsAny(out, "\x1b\x07\u202e") || !strings.Contains(out, `evil\x1b]0;pwned\a\x1b[2J\u202eexample.com`) {
			t.Errorf("%s: %q", name, out)
		}
	}
	for name, out := range map[string]string{
		"info --json":      m.ok("info", "20001", "--json"),
		"admin order show": srv.ok("admin", "order", "show", "20001"),
	} {
		var doc struct {
			Certificate struct {
				CommonName string `json:"common_name"`
			} `json:"certificate"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Certificate.CommonName != evil {
			t.Errorf("%s: %q %v", name, doc.Certificate.CommonName, err)
		}
	}
}

// admin export and admin restore carry webhook endpoints, their secrets
// as stored and their state, across stores: after a restore into
// PostgreSQL the export is the same, and an event is delivered signed
// with the secret the member was given before the move.
func TestExportRestoreWebhookEndpoints(t *testing.T) {
	t.Parallel()
	pg := testdb.Postgres(t)
	src := newStoreCLI(t, testdb.SQLite(t))
	src.ok("admin", "member", "add", "alice")
	rc := newReceiver(t)
	rc.addEndpoint(src, "alice", "--events", "order.status_changed")
	other := strings.Fields(src.ok("admin", "webhook", "add", "alice", "http://127.0.0.1:9/other", "--allow-private"))[1]
	src.ok("admin", "webhook", "rotate", other)
	importOrders(t, src, "alice", 1, 1, "issued")
	first := src.ok("admin", "export")
	if strings.Count(first, `"type":"endpoint"`) != 2 {
		t.Fatalf("export has no endpoints:\n%s", redactSecrets(first))
	}
	dst := newStoreCLI(t, pg)
	if _, errOut, err := dst.run(first, "admin", "restore", "-"); err != nil {
		t.Fatalf("restore into PostgreSQL: %v %s", err, errOut)
	}
	if second := dst.ok("admin", "export"); second != first {
		t.Fatalf("PostgreSQL export differs:\n%s\n---\n%s", redactSecrets(first), redactSecrets(second))
	}
	if list := dst.ok("admin", "webhook", "list", "alice"); !strings.Contains(list, rc.srv.URL+"/hook") || !strings.Contains(list, "/other") {
		t.Fatalf("webhook list after the restore:\n%s", list)
	}
	startProcess(t, buildBinary(t), "serve", "--addr", "127.0.0.1:0", "--db", pg, "--webhook-allow-private")
	importOrders(t, dst, "alice", 1, 1, "revoked")
	if got := rc.wait(1); got[0].typ != "order.status_changed" { // verified with the secret given before the move
		t.Fatalf("after the restore: %+v", got[0])
	}
}

// redactSecrets keeps signing secrets out of the test's output.
func redactSecrets(s string) string {
	return regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`).ReplaceAllString(s, "whsec_(redacted)")
}

// days_remaining is exact for the farthest dates the format allows (it was
// clamped at ±106751 days, time.Duration's range), in the OrderInfo
// answer admin order show prints.
func TestDaysRemainingFarDates(t *testing.T) {
	t.Parallel()
	c := newStoreCLI(t, testdb.SQLite(t))
	c.ok("admin", "member", "add", "alice")
	for i, till := range []string{"9999-12-31", "0001-01-01"} {
		id := 40001 + i
		if _, errOut, err := c.run(webhookOrder(id, "issued", till), "admin", "order", "import", "--member", "alice", "-"); err != nil {
			t.Fatal(err, errOut)
		}
		now := time.Now().UTC()
		out := c.ok("admin", "order", "show", strconv.Itoa(id))
		var doc struct {
			Certificate struct {
				DaysRemaining int64 `json:"days_remaining"`
			} `json:"certificate"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		date, _ := time.Parse(time.DateOnly, till)
		today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		if want := (date.Unix() - today.Unix()) / 86400; doc.Certificate.DaysRemaining != want {
			t.Errorf("valid till %s: days_remaining %d, want %d", till, doc.Certificate.DaysRemaining, want)
		}
	}
}

// serve on a PostgreSQL that refuses LISTEN (a hot standby, a pooler in
// transaction mode) does not turn its cache on: it says so in the log and
// in certorder_cache_enabled, and a key revoked is refused on the next
// request. Before, the LISTEN error was shadowed and the cache served
// stale answers.
func TestCacheOffWithoutListen(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	c := newStoreCLI(t, dsn)
	c.ok("admin", "member", "add", "alice")
	keyOut := c.ok("admin", "key", "create", "alice")
	key := regexp.MustCompile(`cok_\S+`).FindString(keyOut)
	proxied := listenRefusingProxy(t, dsn)
	p := startProcess(t, buildBinary(t), "serve", "--addr", "127.0.0.1:0", "--db", proxied, "--webhooks=false",
		"--metrics-addr", "127.0.0.1:0")
	metricsAddr := p.waitFor(p.log, `msg="metrics listening" addr=(\S+)`)
	if !strings.Contains(p.log.String(), "cache: not started") {
		t.Errorf("no log line saying the cache is off:\n%s", p.log.String())
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "\ncertorder_cache_enabled 0\n") {
		t.Errorf("certorder_cache_enabled is not 0")
	}
	auth := `{"AccessName":"alice","AccessKey":"` + key + `","action":"Auth"}`
	for i := range 2 { // the second would be the cache's
		if status, _ := post(t, p.endpoint, auth); status != 200 {
			t.Fatalf("Auth %d: %d", i, status)
		}
	}
	if _, errOut, err := c.run("", "admin", "key", "revoke", key); err != nil {
		t.Fatalf("revoke: %v %s", err, errOut)
	}
	if status, _ := post(t, p.endpoint, auth); status != 401 {
		t.Fatalf("Auth with the revoked key: %d, want 401", status)
	}
}
