package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/stores"
)

// A sync killed mid-run (SIGKILL, while DigiCert is slow) leaves whole
// batches; the next run takes up where it stopped, fetching only what is
// missing, and ends with the store a sync without the kill makes.
func TestSyncKilledMidRun(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	g, err := u.sim.Generate(260, 9)
	if err != nil {
		t.Fatal(err)
	}
	setup := func(c *cli) {
		c.ok("admin", "member", "add", "alice")
		c.ok("admin", "member", "add", "bob")
		c.ok("admin", "member", "link", "alice", "--container", "10001")
		c.ok("admin", "member", "link", "bob", "--container", "10003")
	}
	reference := syncCLI(t, testdb.SQLite(t), u)
	setup(reference)
	reference.sync()

	dsn := testdb.SQLite(t)
	c := syncCLI(t, dsn, u)
	setup(c)
	u.sim.SetDelay(20 * time.Millisecond)
	cmd := exec.Command(bin, "sync", "--db", dsn)
	cmd.Env = append(os.Environ(), "CERTORDER_DIGICERT_URL="+u.url, "CERTORDER_DIGICERT_API_KEY="+simKey, "CERTORDER_DIGICERT_LIMITS=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once the first batch is stored, well before the last.
	held := func() int {
		n := 0
		for _, name := range []string{"alice", "bob"} {
			n += strings.Count(c.ok("admin", "order", "list", name), "\n") - 1
		}
		return n
	}
	poll.Within(30*time.Second, func() bool { return held() > 0 }) // checked below
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	stored := held()
	if stored == 0 || strings.Contains(out.String(), "sync ok") {
		t.Fatalf("killed after %d orders were stored; output:\n%s", stored, out.String())
	}
	if st := c.ok("admin", "sync", "status"); !strings.Contains(st, "cursor: none") {
		t.Fatalf("a killed run moved the cursor:\n%s", st)
	}
	u.sim.SetDelay(0)
	rerun, _ := c.sync()
	if count(t, rerun, "fetched") >= g.Orders-g.Pending || !strings.HasPrefix(rerun, "sync ok (full") {
		t.Errorf("the rerun fetched everything again: %s", rerun)
	}
	t.Logf("killed with %d orders stored; rerun: %s", stored, rerun)
	// Members differ in their creation times; the orders must not differ at all.
	orderLines := func(export string) string {
		var lines []string
		for _, l := range strings.Split(export, "\n") {
			if strings.HasPrefix(l, `{"type":"order"`) {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	got, want := orderLines(c.ok("admin", "export")), orderLines(reference.ok("admin", "export"))
	if got != want || want == "" {
		t.Fatalf("after the rerun the orders differ from a sync without the kill")
	}
}

// Two serve instances on one PostgreSQL, both with --sync-every: one
// syncs at a time, the other skips the round and says so; DigiCert never
// sees two syncs at once. /metrics has the sync's metrics, and /readyz
// does not depend on DigiCert.
func TestSyncEveryTwoInstances(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	bin := buildBinary(t)
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	if _, err := u.sim.Generate(20, 4); err != nil {
		t.Fatal(err)
	}
	c := syncCLI(t, dsn, u)
	c.ok("admin", "member", "add", "alice")
	c.ok("admin", "member", "link", "alice", "--container", "10001")
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(simKey), 0o600); err != nil {
		t.Fatal(err)
	}
	u.sim.SetDelay(60 * time.Millisecond) // a round outlasts the interval
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", dsn, "--metrics-addr", "127.0.0.1:0", "--sync-every", "200ms",
		"--digicert-url", u.url, "--digicert-api-key-file", keyFile, "--digicert-limits", "off"}
	a, b := startProcess(t, bin, args...), startProcess(t, bin, args...)
	metricsAddr := a.waitFor(a.log, `msg="metrics listening" addr=(\S+)`)
	wantMetrics := []string{`certorder_sync_last_success_timestamp_seconds \d\.\d+e\+09`,
		`certorder_sync_upstream_requests_total\{status="200"\} \d+`, `certorder_sync_runs_total\{outcome="(ok|skipped)"\} \d+`}
	// Until the instances have contended (three runs kept, a round skipped)
	// and a has synced, or a minute (a busy database slows the runs).
	var metrics string
	poll.Within(time.Minute, func() bool { // checked below
		metrics = httpGet(t, "http://"+metricsAddr+"/metrics")
		done := strings.Contains(a.log.String()+b.log.String(), "sync skipped: another instance is syncing")
		for _, re := range wantMetrics {
			done = done && regexp.MustCompile(re).MatchString(metrics)
		}
		return done && len(syncState(t, dsn).Runs) >= 3
	})
	for _, re := range wantMetrics {
		if !regexp.MustCompile(re).MatchString(metrics) {
			t.Errorf("/metrics lacks %s", re)
		}
	}
	for _, p := range []*process{a, b} {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*process{a, b} {
		<-p.logDone
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("serve exited with %v\n%s", err, p.log.String())
		}
		if strings.Contains(p.log.String(), simKey) {
			t.Error("the log shows the CertCentral API key")
		}
	}
	if n := u.maxInFlight.Load(); n != 1 {
		t.Errorf("DigiCert saw %d requests at once: two syncs ran together", n)
	}
	skips := strings.Count(a.log.String()+b.log.String(), "sync skipped: another instance is syncing")
	st := syncState(t, dsn)
	instances := map[string]int{}
	for i, r := range st.Runs {
		instances[r.Instance]++
		if !r.OK && !strings.Contains(r.Error, "context canceled") {
			t.Errorf("run %+v failed", r)
		}
		if i > 0 && r.Finished.After(st.Runs[i-1].Started) {
			t.Errorf("runs overlap: %+v and %+v", r, st.Runs[i-1])
		}
	}
	t.Logf("%d runs by %v, %d skipped rounds", len(st.Runs), instances, skips)
	if len(st.Runs) < 3 || skips == 0 {
		t.Errorf("%d runs, %d skips: the instances did not contend", len(st.Runs), skips)
	}
	if n := strings.Count(c.ok("admin", "order", "list", "alice"), "\n"); n < 2 {
		t.Errorf("alice has %d orders", n-1)
	}
}

// syncState is the sync state, with up to 100 runs, of the store at dsn.
func syncState(t *testing.T, dsn string) storekit.SyncState {
	t.Helper()
	store, err := stores.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st, err := store.SyncState(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// /readyz answers from the store alone: with DigiCert unreachable (the
// sync backing off) or refusing the key (the sync failing, and saying
// so), the service stays ready, and stops promptly.
func TestReadyWithoutDigiCert(t *testing.T) {
	t.Parallel()
	ready := func(endpoint string) {
		t.Helper()
		resp, err := http.Get(strings.TrimSuffix(endpoint, "api/digicert/") + "readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/readyz = %d with DigiCert out of reach", resp.StatusCode)
		}
	}
	waitLog := func(log *syncBuffer, want string) {
		t.Helper()
		if !poll.Within(20*time.Second, func() bool { return strings.Contains(log.String(), want) }) {
			t.Fatalf("no %q in the log:\n%s", want, log.String())
		}
	}
	// DigiCert out of reach: each connection is closed at once, unanswered
	// (the sync backs off), and counted.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var tries atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			tries.Add(1)
			conn.Close()
		}
	}()
	dead := "http://" + ln.Addr().String() + digicerttest.BasePath
	c := newStoreCLI(t, testdb.SQLite(t))
	c.env["CERTORDER_DIGICERT_API_KEY"] = simKey
	log := &syncBuffer{}
	endpoint, _ := startServeWith(t, c, log, "--sync-every", "1h", "--digicert-url", dead)
	waitLog(log, "syncing from CertCentral")
	poll.Until(t, 20*time.Second, "the sync tried DigiCert (and is backing off)", func() bool { return tries.Load() > 0 })
	ready(endpoint)

	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	c2 := newStoreCLI(t, testdb.SQLite(t))
	c2.env["CERTORDER_DIGICERT_API_KEY"] = "refused-key-91ab"
	log2 := &syncBuffer{}
	endpoint2, _ := startServeWith(t, c2, log2, "--sync-every", "1h", "--digicert-url", u.url)
	waitLog(log2, "sync failed")
	ready(endpoint2)
	if !strings.Contains(log2.String(), "DigiCert refused the API key") || strings.Contains(log.String()+log2.String(), "refused-key-91ab") ||
		strings.Contains(log.String(), simKey) {
		t.Fatalf("the log:\n%s", log2.String())
	}
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
