package server_test

// Tests of issue 10's findings, each through the real HTTP interface.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/storetest"
)

// Connections that send headers and then a body a byte at a time, from
// several addresses, never take the places of requests being answered:
// normal clients keep getting their answers. (The body deadline is far
// beyond the test: with 3 s, a machine busy for longer while the six
// addresses were probed freed their places first, and the test failed
// twice in full runs; TestBodyDeadlineAndPerIP tests the deadline.)
func TestSlowBodies(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, testdb.SQLite(t), server.Config{Metrics: reg, Limits: server.Limits{
		MaxInFlight: 8, MaxPerIP: 8, BodyTimeout: time.Minute}})
	host := strings.TrimPrefix(strings.TrimSuffix(f.url, "/api/digicert/"), "http://")
	const addresses, perAddress = 6, 8
	var slow sync.WaitGroup
	stop := make(chan struct{})
	defer func() { close(stop); slow.Wait() }()
	opened := make(chan bool, addresses*perAddress)
	var answered atomic.Int64
	for a := range addresses {
		for range perAddress {
			slow.Add(1)
			go func() {
				defer slow.Done()
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+a))}, Timeout: 2 * time.Second}
				conn, err := d.Dial("tcp", host)
				if err != nil {
					opened <- false
					return
				}
				defer conn.Close()
				// Connection: close, so that a refused request is answered at
				// once (the server would read the rest of the body first, to
				// keep the connection, and the refusal would go unseen).
				fmt.Fprintf(conn, "POST /api/digicert/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
				opened <- true
				done := make(chan struct{})
				go func() {
					conn.Read(make([]byte, 1)) // an answer, or the connection closed
					close(done)
				}()
				if slowBody(conn, stop, done) {
					answered.Add(1)
				}
			}()
		}
	}
	for range addresses * perAddress {
		if !<-opened {
			t.Skip("cannot bind 127.0.0.x source addresses here")
		}
	}
	// Until the server reads every slow body (the gauge: a probe before
	// then could take an address's last place, and a slow request arriving
	// after it would be refused), then one request more from each address
	// is refused.
	poll.Until(t, 10*time.Second, "the slow requests all being read", func() bool {
		return metric(t, reg, "certorder_requests_open") == addresses*perAddress
	})
	for a := range addresses {
		probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+a))}}).DialContext}}
		resp, err := probe.Post(f.url, "application/json", strings.NewReader(f.alice("Auth")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a ninth request from 127.0.0.%d: %d", 2+a, resp.StatusCode)
		}
	}
	var latencies []time.Duration
	for range 32 {
		start := time.Now()
		status, got := f.post(t, f.alice("OrderInfo", "orderId", "1001"))
		latencies = append(latencies, time.Since(start))
		if status != 200 {
			t.Fatalf("a normal request beside %d slow bodies: %d %s", addresses*perAddress, status, got)
		}
	}
	if n := answered.Load(); n != 0 {
		t.Fatalf("%d slow requests were answered before their bodies came", n)
	}
	slices.Sort(latencies)
	t.Logf("slow-body: %d addresses x %d connections; normal clients 32/32 OK, p50 %v, max %v",
		addresses, perAddress, latencies[len(latencies)/2], latencies[len(latencies)-1])
}

// slowBody sends conn's body a space every 200 ms, for at most 60 s (far
// beyond the test), until stop is closed (false) or the request is
// answered (true).
func slowBody(conn net.Conn, stop, answered <-chan struct{}) bool {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for range 300 {
		select {
		case <-stop:
			return false
		case <-answered:
			return true
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				return true
			}
		}
	}
	return false
}

// One address cannot hold more than MaxPerIP requests open; a slow body is
// cut at the body deadline with 408, which gives its place back. (Two
// fixtures: with one short deadline for both, a machine busy for longer
// than the deadline freed the places before the third request came, and
// the test failed once under the full suite with PostgreSQL and Chromium.)
func TestBodyDeadlineAndPerIP(t *testing.T) {
	t.Parallel()
	open := func(f *fixture) net.Conn {
		host := strings.TrimPrefix(strings.TrimSuffix(f.url, "/api/digicert/"), "http://")
		conn, err := net.DialTimeout("tcp", host, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /api/digicert/ HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
		return conn
	}
	var status int
	var got string
	reg := prometheus.NewRegistry()
	held := newFixture(t, testdb.SQLite(t), server.Config{Metrics: reg, Limits: server.Limits{MaxPerIP: 2, BodyTimeout: time.Minute}})
	a, b := open(held), open(held)
	// Until the server reads both bodies (the gauge; a request sent before
	// then could take the address's last place: 1 run of the server's
	// tests in 24 at load 5), a third request is refused.
	poll.Until(t, 10*time.Second, "both slow requests being read", func() bool {
		return metric(t, reg, "certorder_requests_open") == 2
	})
	if status, got = held.post(t, held.alice("Auth")); status != 429 || got != rateLimited {
		t.Fatalf("a third request from the address: %d %s", status, got)
	}
	a.Close()
	b.Close()
	// Until both places are free again.
	poll.Until(t, 10*time.Second, "the places given back", func() bool {
		return metric(t, reg, "certorder_requests_open") == 0
	})
	if status, got = held.post(t, held.alice("Auth")); status != 200 {
		t.Fatalf("after the slow requests went: %d %s", status, got)
	}

	f := newFixture(t, testdb.SQLite(t), server.Config{Limits: server.Limits{MaxPerIP: 1, BodyTimeout: 300 * time.Millisecond}})
	c := open(f)
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	cut, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 408 || strings.TrimSpace(string(cut)) != e100 {
		t.Fatalf("a body slower than the deadline: %d %s", resp.StatusCode, cut)
	}
	// The cut request gave its place back before its answer was written.
	if status, got = f.post(t, f.alice("Auth")); status != 200 {
		t.Fatalf("after the cut request: %d %s", status, got)
	}
}

// A flood from one address, almost all refused by the per-IP limit, is a
// few counted entries in the audit trail, and real traffic beside it loses
// none of its own.
func TestAuditFlood(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, testdb.SQLite(t), server.Config{AuditRetention: time.Hour, Metrics: reg,
		Limits: server.Limits{IPRate: 5, IPBurst: 10, TrustedProxies: loopback}})
	const flood, real = 3000, 40
	var wg sync.WaitGroup
	var refused sync.Map
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range flood / 4 {
				if status, _, _ := f.postFrom(t, "203.0.113.66", f.alice("Auth")); status == 429 {
					n, _ := refused.LoadOrStore(w, new(int))
					*n.(*int)++
				}
			}
		}()
	}
	for i := range real {
		ip := fmt.Sprintf("198.51.100.%d", i)
		if status, _, _ := f.postFrom(t, ip, f.alice("OrderInfo", "orderId", "1001")); status != 200 {
			t.Fatalf("real request %d: %d", i, status)
		}
	}
	wg.Wait()
	f.handler.Close()
	total := 0
	refused.Range(func(_, n any) bool { total += *n.(*int); return true })
	es, err := f.store.Audit(context.Background(), certorder.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	rows, counted, realRows := 0, 0, 0
	for _, e := range es {
		switch {
		case e.ClientIP == "203.0.113.66" && e.Outcome == 140:
			rows++
			counted += e.Count
		case strings.HasPrefix(e.ClientIP, "198.51.100.") && e.Outcome == 0 && e.Member == "alice":
			realRows++
		}
	}
	if counted != total || rows > 20 || realRows != real {
		t.Fatalf("flood of %d refused: %d rows counting %d; real traffic %d of %d rows", total, rows, counted, realRows, real)
	}
	if got := metric(t, reg, "certorder_audit_dropped_total"); got != 0 {
		t.Fatalf("audit entries dropped: %v", got)
	}
	t.Logf("flood: %d requests refused, written as %d audit rows; %d real entries, 0 dropped", total, rows, realRows)
}

// A key sent in the wrong field is not written in plaintext: not in the
// audit trail, not in the access log.
func TestKeyInWrongField(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	var mu sync.Mutex
	f := newFixture(t, testdb.SQLite(t), server.Config{AuditRetention: time.Hour,
		Logger: slogTo(lockedWriter{&mu, &log})})
	secret := f.aliceKey[len("cok_0123456789ab_"):]
	f.post(t, body("AccessName", q(f.aliceKey), "AccessKey", q(f.aliceKey), "action", `"Auth"`))
	f.post(t, body("AccessName", `"alice"`, "AccessKey", q(f.aliceKey), "action", q(f.aliceKey)))
	f.handler.Close()
	es, err := f.store.Audit(context.Background(), certorder.AuditQuery{})
	if err != nil || len(es) != 2 {
		t.Fatalf("audit: %+v, %v", es, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range es {
		if strings.Contains(e.Member+e.Action, secret) || !strings.Contains(e.Member+e.Action, "[redacted]") {
			t.Errorf("audit entry with the key: %+v", e)
		}
	}
	if strings.Contains(log.String(), secret) {
		t.Errorf("the access log shows the key:\n%s", log.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Every path under /api, however written, answers the JSON failure 102;
// never a redirect, an empty body or the web page. A declared length over
// the limit is refused before the body is read.
func TestAPIPaths(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.SQLite(t), server.Config{Web: true})
	base := strings.TrimSuffix(f.url, "/api/digicert/")
	host := strings.TrimPrefix(base, "http://")
	raw := func(requestLine string, headers string) (int, string) {
		conn, err := net.DialTimeout("tcp", host, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n", requestLine, headers)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", requestLine, ct)
		}
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for _, p := range []string{"//api/digicert/", "/api//digicert/", "/api/./digicert/", "/api/x/../digicert/",
		"/API/digicert/", "/Api/digicert/", "/api", "/api/", "/api/other/", "/x/../api/digicert/", "/api/digicert/x",
		"/api/digicert//", "/api/%64igicert%2F..%2F"} {
		if status, got := raw("POST "+p, ""); status != 404 || got != e102 {
			t.Errorf("POST %s: %d %s", p, status, got)
		}
	}
	for _, p := range []string{"/api/digicert/", "/api/digicert"} {
		if status, got := raw("POST "+p, "Content-Length: 2\r\n\r\n{}"); status != 400 || got != e110 {
			t.Errorf("POST %s: %d %s", p, status, got)
		}
	}
	// 413 at once: the body is never sent, and the answer does not wait for it.
	start := time.Now()
	if status, got := raw("POST /api/digicert/", "Content-Length: 10000000\r\n"); status != 413 || got != e100 || time.Since(start) > 2*time.Second {
		t.Errorf("declared length over the limit: %d %s after %v", status, got, time.Since(start))
	}
}

// Another member's order is never read: asking for a large order of
// another member costs what asking for a missing one does.
func TestForeignOrderCostsNothing(t *testing.T) {
	f := newFixture(t, testdb.SQLite(t), server.Config{})
	big := strings.Replace(storetest.OrderJSON(3001, 0, "2030-01-01"), `"status":"issued"`,
		`"status":"issued","note":"`+strings.Repeat("x", certorder.MaxOrderBytes-2000)+`"`, 1)
	if _, err := f.store.ImportOrders(context.Background(), "bob", storetest.Orders(t, big)); err != nil {
		t.Fatal(err)
	}
	allocated := func(orderID string) uint64 {
		req := f.alice("OrderInfo", "orderId", orderID)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 50 {
			rec := httptest.NewRecorder()
			f.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/digicert/", strings.NewReader(req)))
			if rec.Code != 404 || strings.TrimSpace(rec.Body.String()) != e131 {
				t.Fatalf("order %s: %d %s", orderID, rec.Code, rec.Body.String())
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 50
	}
	missing, foreign := allocated("999999"), allocated("3001")
	t.Logf("bytes allocated per request: missing order %d, another member's %d KiB order %d", missing, len(big)>>10, foreign)
	if foreign > missing+16<<10 {
		t.Fatalf("another member's order costs %d bytes a request, a missing one %d", foreign, missing)
	}
}

// Wrong keys for one member from 1,500 addresses are a few counted
// entries, not one each (the review saw 11.3k rows in 10 s from 3,000
// addresses); their counts add up to the requests refused.
func TestAuditWrongKeysAggregated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.SQLite(t), server.Config{AuditRetention: time.Hour,
		Limits: server.Limits{TrustedProxies: loopback}})
	wrong := body("AccessName", `"alice"`, "AccessKey", q(f.aliceKey+"x"), "action", `"OrderInfo"`, "orderId", "1001")
	const requests = 3000
	var wg sync.WaitGroup
	var refused atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := range requests / 4 {
				ip := fmt.Sprintf("10.%d.%d.%d", w, i%1500/250, i%250)
				if status, _, _ := f.postFrom(t, ip, wrong); status == 401 {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	f.handler.Close()
	es, err := f.store.Audit(context.Background(), certorder.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	rows, counted := 0, 0
	for _, e := range es {
		if e.Member == "alice" && e.Outcome == 111 {
			rows++
			counted += max(e.Count, 1)
		}
	}
	t.Logf("%d wrong keys refused, written as %d audit rows counting %d", refused.Load(), rows, counted)
	if int64(counted) != refused.Load() || refused.Load() != requests || rows > requests/20 {
		t.Fatalf("%d refused: %d rows counting %d", refused.Load(), rows, counted)
	}
}

// A body of unknown length (chunked) is bounded as one of declared length:
// over the limit, 413, and the connection is closed after the answer;
// within it, answered as usual.
func TestChunkedBodyLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.SQLite(t), server.Config{})
	post := func(body string) (*http.Response, string) {
		// A reader of no known length (ContentLength 0 with a body): the
		// client sends it chunked.
		req, err := http.NewRequest(http.MethodPost, f.url, io.MultiReader(strings.NewReader(body)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, strings.TrimSpace(string(b))
	}
	resp, got := post(f.alice("Auth", "pad", q(strings.Repeat("x", 20<<10))))
	if resp.StatusCode != 413 || got != e100 || !resp.Close {
		t.Errorf("chunked body over the limit: %d %s, connection closed: %v", resp.StatusCode, got, resp.Close)
	}
	resp, got = post(f.alice("Auth"))
	if resp.StatusCode != 200 || got != `{"message":"Authenticated"}` || resp.Close {
		t.Errorf("chunked body within the limit: %d %s, connection closed: %v", resp.StatusCode, got, resp.Close)
	}
}
