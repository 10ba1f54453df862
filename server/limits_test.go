package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/server"
)

// clock is a test clock the limits read; only Advance moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const rateLimited = `{"error_message":"Error(140) rate limit is exceeded."}`

// postFrom sends body as if from client IP ip, through a trusted proxy.
func (f *fixture) postFrom(t *testing.T, ip, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, strings.TrimSpace(b.String()), resp.Header
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

func TestIPRateLimit(t *testing.T) {
	t.Parallel()
	clk := &clock{t: today}
	f := newFixture(t, testdb.SQLite(t), server.Config{Now: clk.Now,
		Limits: server.Limits{IPRate: 1, IPBurst: 2, TrustedProxies: loopback}})
	for i := range 2 {
		if status, got, _ := f.postFrom(t, "198.51.100.1", f.alice("Auth")); status != 200 {
			t.Fatalf("request %d within the burst: %d %s", i, status, got)
		}
	}
	status, got, h := f.postFrom(t, "198.51.100.1", f.alice("Auth"))
	if status != 429 || got != rateLimited || h.Get("Retry-After") != "1" {
		t.Fatalf("over the limit: %d %s Retry-After %q", status, got, h.Get("Retry-After"))
	}
	// Another client is not held back by the first.
	if status, _, _ := f.postFrom(t, "198.51.100.2", f.alice("Auth")); status != 200 {
		t.Fatalf("another IP: %d", status)
	}
	clk.Advance(time.Second)
	if status, _, _ := f.postFrom(t, "198.51.100.1", f.alice("Auth")); status != 200 {
		t.Fatalf("a second later: %d", status)
	}
}

func TestMemberRateLimit(t *testing.T) {
	t.Parallel()
	clk := &clock{t: today}
	f := newFixture(t, testdb.SQLite(t), server.Config{Now: clk.Now,
		Limits: server.Limits{MemberRate: 0.5, MemberBurst: 3, TrustedProxies: loopback}})
	// The member's budget is shared by all its clients.
	for i, ip := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
		if status, _, _ := f.postFrom(t, ip, f.alice("Auth")); status != 200 {
			t.Fatalf("request %d: %d", i, status)
		}
	}
	status, got, h := f.postFrom(t, "198.51.100.4", f.alice("OrderInfo", "orderId", "1001"))
	if status != 429 || got != rateLimited || h.Get("Retry-After") != "2" {
		t.Fatalf("over the limit: %d %s Retry-After %q", status, got, h.Get("Retry-After"))
	}
	// bob has his own budget.
	bob := body("AccessName", `"bob"`, "AccessKey", q(f.bobKey), "action", `"Auth"`)
	if status, _, _ := f.postFrom(t, "198.51.100.1", bob); status != 200 {
		t.Fatalf("bob: %d", status)
	}
	clk.Advance(2 * time.Second)
	if status, _, _ := f.postFrom(t, "198.51.100.1", f.alice("Auth")); status != 200 {
		t.Fatalf("two seconds later: %d", status)
	}
}

func TestAuthLockout(t *testing.T) {
	t.Parallel()
	clk := &clock{t: today}
	f := newFixture(t, testdb.SQLite(t), server.Config{Now: clk.Now, Limits: server.Limits{
		AuthFailures: 3, AuthFailuresPerIP: 5, AuthFailWindow: time.Minute, AuthLockout: 5 * time.Minute, TrustedProxies: loopback}})
	wrong := func(name string) string {
		return body("AccessName", q(name), "AccessKey", q(f.aliceKey+"x"), "action", `"Auth"`)
	}
	bob := body("AccessName", `"bob"`, "AccessKey", q(f.bobKey), "action", `"Auth"`)
	// Failures for alice from many IPs, more than the limit in all: alice's
	// right key from an address that has not failed is never refused.
	for i, ip := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4", "198.51.100.5"} {
		if status, _, _ := f.postFrom(t, ip, wrong("alice")); status != 401 {
			t.Fatalf("failure %d: %d", i, status)
		}
	}
	if status, got, _ := f.postFrom(t, "198.51.100.9", f.alice("Auth")); status != 200 {
		t.Fatalf("alice from a clean address after failures elsewhere: %d %s", status, got)
	}
	// Three failures from one IP for alice lock that IP out for alice, even
	// with the right key; not for bob, and not alice elsewhere.
	for range 3 {
		f.postFrom(t, "203.0.113.1", wrong("alice"))
	}
	status, got, h := f.postFrom(t, "203.0.113.1", f.alice("Auth"))
	if status != 429 || got != rateLimited || h.Get("Retry-After") != "300" {
		t.Fatalf("locked-out IP and name: %d %s Retry-After %q", status, got, h.Get("Retry-After"))
	}
	if status, _, _ := f.postFrom(t, "203.0.113.1", bob); status != 200 {
		t.Fatalf("bob from the same IP: %d", status)
	}
	if status, _, _ := f.postFrom(t, "203.0.113.2", f.alice("Auth")); status != 200 {
		t.Fatalf("alice from another IP: %d", status)
	}
	// A name that belongs to nobody is locked out the same way, byte for byte.
	for range 3 {
		f.postFrom(t, "203.0.113.3", wrong("mallory"))
	}
	status2, got2, h2 := f.postFrom(t, "203.0.113.3", wrong("mallory"))
	if status2 != status || got2 != got || h2.Get("Retry-After") != h.Get("Retry-After") {
		t.Fatalf("unknown name locked out differently: %d %s %q", status2, got2, h2.Get("Retry-After"))
	}
	// Failures from one IP for many names lock out the IP for everyone.
	for _, name := range []string{"a1", "a2", "a3", "a4", "a5"} {
		f.postFrom(t, "203.0.113.5", wrong(name))
	}
	if status, _, _ := f.postFrom(t, "203.0.113.5", bob); status != 429 {
		t.Fatalf("locked-out IP: %d", status)
	}
	if status, _, _ := f.postFrom(t, "203.0.113.6", bob); status != 200 {
		t.Fatalf("another IP: %d", status)
	}
	clk.Advance(5*time.Minute + time.Second)
	if status, got, _ := f.postFrom(t, "203.0.113.1", f.alice("Auth")); status != 200 {
		t.Fatalf("after the lockout: %d %s", status, got)
	}
	// Failures spread wider than the window never add up to a lockout.
	for range 5 {
		f.postFrom(t, "198.51.100.20", wrong("bob"))
		clk.Advance(2 * time.Minute)
	}
	if status, _, _ := f.postFrom(t, "198.51.100.20", bob); status != 200 {
		t.Fatalf("slow failures locked bob out: %d", status)
	}
}

// blockingStore holds FindCredential until released.
type blockingStore struct {
	storekit.Store
	entered chan struct{}
	release chan struct{}
}

func (s blockingStore) FindCredential(ctx context.Context, id string, order int64) (certorder.Credential, *certorder.Order, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.FindCredential(ctx, id, order)
}

func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	base := newFixture(t, testdb.SQLite(t), server.Config{})
	bs := blockingStore{Store: base.store, entered: make(chan struct{}, 1), release: make(chan struct{})}
	h, err := server.New(bs, server.Config{CASegment: "digicert", Limits: server.Limits{MaxInFlight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	done := make(chan int)
	go func() {
		status, _ := do(t, http.MethodPost, srv.URL+"/api/digicert/", base.alice("Auth"))
		done <- status
	}()
	<-bs.entered // the first request holds the only place
	start := time.Now()
	status, got := do(t, http.MethodPost, srv.URL+"/api/digicert/", base.alice("Auth"))
	if status != 503 || got != `{"error_message":"Error(150) service is unavailable."}` || time.Since(start) > 2*time.Second {
		t.Fatalf("beyond the cap: %d %s after %v", status, got, time.Since(start))
	}
	close(bs.release)
	if status := <-done; status != 200 {
		t.Fatalf("the request in flight: %d", status)
	}
}

func TestClientIPFromTrustedProxyOnly(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	clk := &clock{t: today}
	for _, tc := range []struct {
		name, remote, xff string
		trusted           []netip.Prefix
		want              string
	}{
		{"no proxy", "192.0.2.1:1234", "", nil, "192.0.2.1"},
		{"untrusted peer's header is ignored", "192.0.2.1:1234", "198.51.100.7", trusted, "192.0.2.1"},
		{"trusted proxy", "10.1.2.3:1234", "198.51.100.7", trusted, "198.51.100.7"},
		{"chain of trusted proxies", "10.1.2.3:1234", "198.51.100.7, 10.9.9.9", trusted, "198.51.100.7"},
		{"forged entries before the client are ignored", "10.1.2.3:1234", "1.2.3.4, 198.51.100.7", trusted, "198.51.100.7"},
		{"garbage stops the walk", "10.1.2.3:1234", "198.51.100.7, junk", trusted, "10.1.2.3"},
		{"IPv6", "[2001:db8::1]:443", "", nil, "2001:db8::1"},
		{"IPv4-mapped IPv6", "[::ffff:192.0.2.1]:443", "", nil, "192.0.2.1"},
		{"no port", "192.0.2.1", "", nil, "192.0.2.1"},
		{"not an address", "pipe", "", nil, "pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The audit trail records the client IP the server settled on.
			f := newFixture(t, testdb.SQLite(t), server.Config{Now: clk.Now, AuditRetention: time.Hour,
				Limits: server.Limits{TrustedProxies: tc.trusted}})
			req := httptest.NewRequest(http.MethodPost, "/api/digicert/", strings.NewReader(f.alice("Auth")))
			req.RemoteAddr = tc.remote
			if tc.xff != "" {
				req.Header.Set("X-Forwarded-For", tc.xff)
			}
			f.handler.ServeHTTP(httptest.NewRecorder(), req)
			f.handler.Close()
			es, err := f.store.Audit(context.Background(), certorder.AuditQuery{})
			if err != nil || len(es) != 1 || es[0].ClientIP != tc.want {
				t.Fatalf("audit %+v, %v; want client IP %s", es, err, tc.want)
			}
		})
	}
}

func TestMetricsAndHealth(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, testdb.SQLite(t), server.Config{Metrics: reg})
	f.post(t, f.alice("Auth"))
	f.post(t, f.alice("OrderInfo", "orderId", "1001"))
	f.post(t, f.alice("OrderInfo", "orderId", "2001"))
	f.post(t, body("AccessName", `"alice"`, "AccessKey", `"nope"`, "action", `"Auth"`))
	f.post(t, f.alice("Frobnicate"))
	f.post(t, f.alice("CertificateCheck", "serial_number", `"0"`))
	f.post(t, f.alice("CertificateCheck", "thumbprint", `"`+strings.Repeat("ab", 20)+`"`))
	for _, labels := range [][]string{{"Auth", "ok"}, {"OrderInfo", "ok"}, {"OrderInfo", "no_such_order"},
		{"Auth", "credentials_rejected"}, {"other", "unknown_action"}, {"CertificateCheck", "bad_serial_number"},
		{"CertificateCheck", "no_such_thumbprint"}} {
		if got := metric(t, reg, "certorder_requests_total", labels...); got != 1 {
			t.Errorf("certorder_requests_total%v = %v, want 1", labels, got)
		}
	}
	if got := metric(t, reg, "certorder_auth_failures_total"); got != 1 {
		t.Errorf("certorder_auth_failures_total = %v", got)
	}
	// Every action's latency series exists from the start (the handles are made once).
	if n, err := testutil.GatherAndCount(reg, "certorder_build_info", "certorder_request_duration_seconds"); err != nil || n != 1+5 {
		t.Errorf("metrics: %d series, %v", n, err)
	}
	base := strings.TrimSuffix(f.url, "/api/digicert/")
	for path, want := range map[string]string{"/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`} {
		if status, got := do(t, http.MethodGet, base+path, ""); status != 200 || got != want {
			t.Errorf("%s: %d %s", path, status, got)
		}
	}
	f.store.Close()
	if status, got := do(t, http.MethodGet, base+"/readyz", ""); status != 503 {
		t.Errorf("/readyz with the store closed: %d %s", status, got)
	}
}

// metric reads the value of a counter or gauge (a vector's child by its
// label values); 0 if absent.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := len(m.GetLabel()) == len(labels)
			for i, lp := range m.GetLabel() {
				match = match && lp.GetValue() == labels[i]
			}
			if match {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func TestAuditTrail(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dsn string) {
		clk := &clock{t: today}
		f := newFixture(t, dsn, server.Config{Now: clk.Now, AuditRetention: 24 * time.Hour})
		f.post(t, f.alice("OrderInfo", "orderId", "1001"))
		f.post(t, body("AccessName", `"mallory"`, "AccessKey", q(f.aliceKey), "action", `"Auth"`))
		// Text no database takes as it is (NUL) is made safe, not lost with its batch.
		f.post(t, body("AccessName", `"mal\u0000lory"`, "AccessKey", q(f.aliceKey), "action", `"Au\u0000th"`))
		f.handler.Close() // writes what is queued
		es, err := f.store.Audit(context.Background(), certorder.AuditQuery{})
		if err != nil || len(es) != 3 {
			t.Fatalf("audit: %+v, %v", es, err)
		}
		if es[0].Member != "mal\uFFFDlory" || es[0].Action != "Au\uFFFDth" {
			t.Errorf("NUL entry: %+v", es[0])
		}
		got := []certorder.AuditEntry{es[1], es[2]}
		aliceKeyID, _ := certorder.KeyID(f.aliceKey)
		if got[1].Member != "alice" || got[1].KeyID != aliceKeyID || got[1].Action != "OrderInfo" || got[1].OrderID != 1001 || got[1].Outcome != 0 ||
			got[1].ClientIP != "127.0.0.1" || !got[1].Time.Equal(today) {
			t.Errorf("first call: %+v", got[1])
		}
		if got[0].Member != "mallory" || got[0].Outcome != 111 || got[0].KeyID != "" {
			t.Errorf("failed call: %+v", got[0])
		}
	})
}

// The per-address limits count an IPv6 client by its /64: fresh addresses
// of one /64 share one bucket; another /64 has its own.
func TestIPv6LimitsBySlash64(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.SQLite(t), server.Config{Limits: server.Limits{IPRate: 0.001, IPBurst: 2, TrustedProxies: loopback}})
	for i, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff::2"} {
		if status, _, _ := f.postFrom(t, ip, f.alice("Auth")); status != 200 {
			t.Fatalf("request %d: %d", i, status)
		}
	}
	if status, _, _ := f.postFrom(t, "2001:db8:1:2:abcd::3", f.alice("Auth")); status != 429 {
		t.Errorf("a third address of the same /64: %d, want 429", status)
	}
	if status, _, _ := f.postFrom(t, "2001:db8:1:3::1", f.alice("Auth")); status != 200 {
		t.Errorf("another /64: %d, want 200", status)
	}
	if status, _, _ := f.postFrom(t, "198.51.100.7", f.alice("Auth")); status != 200 {
		t.Errorf("an IPv4 address: %d, want 200", status)
	}
}

// The endpoint answers only at its literal path: an escaped slash or
// letter is another path, answered 102, not as if decoded.
func TestEscapedEndpointPath(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.SQLite(t), server.Config{})
	base := strings.TrimSuffix(f.url, "/api/digicert/")
	for _, p := range []string{"/api%2Fdigicert%2F", "/api/digicert%2F", "/api/%64igicert/", "/api%2fdigicert"} {
		resp, err := http.Post(base+p, "application/json", strings.NewReader(f.alice("Auth")))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), "Error(102)") {
			t.Errorf("POST %s: %d %s", p, resp.StatusCode, b)
		}
	}
	if status, _ := f.post(t, f.alice("Auth")); status != 200 {
		t.Errorf("the literal path: %d", status)
	}
}
