package ccwebhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/ccwebhook"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/queue"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/stores"
)

const secret = "ccwebhook-test-secret-0123456789abcdef"

func openStore(t *testing.T) storekit.Store {
	t.Helper()
	s, err := stores.Open(context.Background(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// receive sends one request to rc from the peer, with headers.
func receive(rc http.Handler, peer, key, body string, header ...string) int {
	r := httptest.NewRequest(http.MethodPost, ccwebhook.Path, strings.NewReader(body))
	r.RemoteAddr = peer
	if key != "" {
		r.Header.Set("X-WEBHOOK-KEY", key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, r)
	return w.Code
}

// The allow-list applies to the client address by the service's
// trusted-proxy rules: DigiCert's address behind a trusted proxy is
// accepted, the same header from an untrusted peer is not, and a refusal
// happens before the key is looked at.
func TestReceiverAllowList(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	reg := prometheus.NewRegistry()
	rc, err := ccwebhook.NewReceiver(ccwebhook.ReceiverConfig{Store: store, Secret: secret, Metrics: ccwebhook.NewMetrics(reg),
		Allow:    []netip.Prefix{netip.MustParsePrefix("216.168.240.0/20")},
		ClientIP: func(r *http.Request) string { return server.ClientIP(r, trusted) }})
	if err != nil {
		t.Fatal(err)
	}
	ev := `{"event":"test_webhook_endpoint"}`
	for _, c := range []struct {
		peer, forwarded, key string
		want                 int
	}{
		{"216.168.241.7:4431", "", secret, 200},
		{"[::ffff:216.168.241.7]:4431", "", secret, 200},
		{"10.1.2.3:5555", "216.168.250.1", secret, 200},           // through the trusted proxy
		{"10.1.2.3:5555", "203.0.113.9", secret, 403},             // someone else through it
		{"203.0.113.9:5555", "216.168.250.1", secret, 403},        // a forged header
		{"10.1.2.3:5555", "216.168.250.1, 10.9.9.9", secret, 200}, // two proxies of ours
		{"198.51.100.1:4431", "", "", 403},
		{"216.168.241.7:4431", "", "nope", 401},
	} {
		var h []string
		if c.forwarded != "" {
			h = []string{"X-Forwarded-For", c.forwarded}
		}
		if got := receive(rc, c.peer, c.key, ev, h...); got != c.want {
			t.Errorf("from %s (X-Forwarded-For %q): %d, want %d", c.peer, c.forwarded, got, c.want)
		}
	}
	if n := value(t, reg, "certorder_certcentral_webhook_events_total", "none", ccwebhook.Refused); n != 4 {
		t.Errorf("refused %v, want 4", n)
	}
}

// value reads a series from reg: the metric name and its labels' values
// in the order of its labels' names.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := len(m.GetLabel()) == len(labels)
			for i, l := range m.GetLabel() {
				match = match && l.GetValue() == labels[i]
			}
			if match {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

// What the receiver keeps: an order's event as a job (copies joined), a
// challenge's token, the last event; and the worker of this process is
// told at once. A store that fails is a 503, and CertCentral is asked
// nothing either way.
func TestReceiverRecords(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	queued := 0
	rc, err := ccwebhook.NewReceiver(ccwebhook.ReceiverConfig{Store: store, Secret: secret,
		ClientIP: func(r *http.Request) string { return r.RemoteAddr }, Queued: func() { queued++ }})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := receive(rc, "127.0.0.1:1", secret, `{"event":"certificate_revoked","data":{"order_id":42,"certificate_id":7}}`); got != 200 {
			t.Fatalf("revoked: %d", got)
		}
	}
	if got := receive(rc, "127.0.0.1:1", secret, `{"event":"challenge_webhook_endpoint","data":{"token":"abc123","webhook_id":9}}`); got != 200 {
		t.Fatalf("challenge: %d", got)
	}
	if got := receive(rc, "127.0.0.1:1", secret, `{"event":"challenge_webhook_endpoint","data":{"token":""}}`); got != 400 {
		t.Errorf("a challenge without a token: %d", got)
	}
	ctx := context.Background()
	jobs, err := store.Jobs(ctx, queue.List{Kind: queue.KindCertCentralEvent, SubjectID: 42, Limit: 10})
	if err != nil || len(jobs) != 1 || jobs[0].State != queue.Pending || jobs[0].MemberID != 0 {
		t.Fatalf("order 42's jobs: %+v, %v; want one pending", jobs, err)
	}
	if queued != 3 {
		t.Errorf("the worker was told %d times, want 3", queued)
	}
	w, err := store.CertCentralWebhook(ctx)
	if err != nil || w.LastEvent != digicert.EventChallenge || w.ChallengeToken != "abc123" || w.ChallengeWebhookID != 9 {
		t.Errorf("recorded %+v, %v", w, err)
	}
	store.Close()
	if got := receive(rc, "127.0.0.1:1", secret, `{"event":"order_rejected","data":{"order_id":43}}`); got != 503 {
		t.Errorf("with the store closed: %d, want 503", got)
	}
	if _, err := ccwebhook.NewReceiver(ccwebhook.ReceiverConfig{Store: store, Secret: secret[:31],
		ClientIP: func(r *http.Request) string { return "" }}); !errors.Is(err, ccwebhook.ErrShortSecret) {
		t.Errorf("a 31-character secret: %v", err)
	}
}

// syncEnv is a simulator and a syncer on a store, for the worker.
type syncEnv struct {
	sim    *digicerttest.Server
	store  storekit.Store
	syncer *ccsync.Syncer
}

func newSyncEnv(t *testing.T) *syncEnv {
	t.Helper()
	e := &syncEnv{sim: digicerttest.NewServer(digicerttest.Options{APIKey: "k"}), store: openStore(t)}
	ts := httptest.NewServer(e.sim)
	t.Cleanup(ts.Close)
	client, err := digicert.New(ts.URL+digicerttest.BasePath, "k", digicert.WithLimits())
	if err != nil {
		t.Fatal(err)
	}
	e.sim.AddExample()
	ctx := context.Background()
	if _, err := e.store.AddMember(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.LinkContainer(ctx, "acme", digicerttest.ExampleAcme); err != nil {
		t.Fatal(err)
	}
	if e.syncer, err = ccsync.New(ccsync.Config{Store: e.store, Client: client}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.syncer.Run(ctx, ccsync.Options{}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *syncEnv) enqueue(t *testing.T, rc http.Handler, order string) {
	t.Helper()
	if got := receive(rc, "127.0.0.1:1", secret, `{"event":"certificate_revoked","data":{"order_id":`+order+`}}`); got != 200 {
		t.Fatalf("event: %d", got)
	}
}

// While another sync holds the lock the worker puts the events back for a
// moment, without counting a failure; once it is free, it applies them.
// An order of no member is kept unassigned, as the sync keeps it.
func TestWorkerWaitsForTheLock(t *testing.T) {
	t.Parallel()
	e := newSyncEnv(t)
	ctx := context.Background()
	rc, _ := ccwebhook.NewReceiver(ccwebhook.ReceiverConfig{Store: e.store, Secret: secret,
		ClientIP: func(r *http.Request) string { return r.RemoteAddr }})
	e.sim.SetStatus(100006, "revoked", time.Now())
	e.sim.SetStatus(100003, "revoked", time.Now()) // Globex's: no member
	e.enqueue(t, rc, "100006")
	e.enqueue(t, rc, "100003")
	now := time.Now()
	w := ccwebhook.NewWorker(ccwebhook.WorkerConfig{Store: e.store, Sync: e.syncer, Now: func() time.Time { return now }})

	lock, ok, err := e.store.LockSync(ctx)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := w.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	jobs, _ := e.store.Jobs(ctx, queue.List{Kind: queue.KindCertCentralEvent, SubjectID: 100006, Limit: 1})
	if len(jobs) != 1 || jobs[0].State != queue.Pending || jobs[0].Attempts != 1 || !jobs[0].RunAfter.After(now) ||
		jobs[0].RunAfter.After(now.Add(2*time.Second)) || strings.Contains(string(jobs[0].Result), "failures") {
		t.Fatalf("while the lock is held: %+v", jobs)
	}
	lock.Release()
	now = now.Add(3 * time.Second)
	if err := w.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{100006, 100003} {
		jobs, _ := e.store.Jobs(ctx, queue.List{Kind: queue.KindCertCentralEvent, SubjectID: id, Limit: 1})
		if len(jobs) != 1 || jobs[0].State != queue.Done {
			t.Errorf("order %d's job once the lock is free: %+v", id, jobs)
		}
	}
	o, err := e.store.FindOrder(ctx, 100006)
	if err != nil || o.Status != "revoked" {
		t.Errorf("order 100006: %+v, %v", o, err)
	}
	known, _ := e.store.KnownOrders(ctx, []int64{100003})
	if k := known[100003]; k.MemberID != 0 || k.Status != "revoked" {
		t.Errorf("Globex's order: %+v; want it unassigned and revoked", k)
	}
}

// A CertCentral that fails: the events wait on the queue's schedule, the
// failures counted on the job, and are applied once it answers.
func TestWorkerRetries(t *testing.T) {
	t.Parallel()
	e := newSyncEnv(t)
	ctx := context.Background()
	rc, _ := ccwebhook.NewReceiver(ccwebhook.ReceiverConfig{Store: e.store, Secret: secret,
		ClientIP: func(r *http.Request) string { return r.RemoteAddr }})
	e.sim.SetStatus(100006, "revoked", time.Now())
	e.enqueue(t, rc, "100006")
	now := time.Now()
	w := ccwebhook.NewWorker(ccwebhook.WorkerConfig{Store: e.store, Sync: e.syncer, Now: func() time.Time { return now }})
	e.sim.SetAPIKey("another") // 401: not retried by the client
	if err := w.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	jobs, _ := e.store.Jobs(ctx, queue.List{Kind: queue.KindCertCentralEvent, SubjectID: 100006, Limit: 1})
	if len(jobs) != 1 || jobs[0].State != queue.Pending || !strings.Contains(string(jobs[0].Result), `"failures":1`) ||
		jobs[0].RunAfter.Sub(now) < 4*time.Second || !strings.Contains(jobs[0].LastError, "refused the API key") {
		t.Fatalf("after a failure: %+v %s", jobs, jobs[0].Result)
	}
	e.sim.SetAPIKey("k")
	now = now.Add(time.Minute)
	if err := w.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if o, _ := e.store.FindOrder(ctx, 100006); o == nil || o.Status != "revoked" {
		t.Errorf("order 100006 after the retry: %+v", o)
	}
}

// The poll's witness counts a change an event announces (issued, revoked,
// rejected) when no event of the order was received since the window
// began; a change no event announces is never counted.
func TestWitness(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	reg := prometheus.NewRegistry()
	metrics := ccwebhook.NewMetrics(reg)
	w := ccwebhook.Witness{Store: store, Metrics: metrics}
	ctx := context.Background()
	rc, _ := ccwebhook.NewReceiver(ccwebhook.ReceiverConfig{Store: store, Secret: secret,
		ClientIP: func(r *http.Request) string { return r.RemoteAddr }})
	receive(rc, "127.0.0.1:1", secret, `{"event":"certificate_revoked","data":{"order_id":5}}`)
	since := time.Now().Add(-time.Hour)
	w.PollFound(ctx, 5, "revoked", since)                    // announced
	w.PollFound(ctx, 6, "revoked", since)                    // missed
	w.PollFound(ctx, 7, "canceled", since)                   // no event tells of it
	w.PollFound(ctx, 5, "issued", time.Now().Add(time.Hour)) // the event came before the window
	if got := value(t, reg, "certorder_certcentral_webhook_missed_total"); got != 2 {
		t.Errorf("missed %v, want 2", got)
	}
}
