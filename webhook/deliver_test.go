package webhook_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/webhook"
)

// delivered is one request a receiver got.
type delivered struct {
	header http.Header
	body   []byte
}

// recorder keeps what a receiver got, for checks after Deliver returns.
type recorder struct {
	mu   sync.Mutex
	reqs []delivered
}

func (rc *recorder) record(r *http.Request) delivered {
	body, _ := io.ReadAll(r.Body)
	d := delivered{r.Header.Clone(), body}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, d)
	rc.mu.Unlock()
	return d
}

func (rc *recorder) all() []delivered {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivered(nil), rc.reqs...)
}

func testClient(t *testing.T, timeout time.Duration) *http.Client {
	t.Helper()
	guard := &noPublicDial{}
	return webhook.NewHTTPClient(webhook.Options{AllowPrivate: true, Timeout: timeout, Control: guard.control})
}

// A delivery carries the Standard Webhooks headers and a signature that
// both the reference library and client.VerifyWebhook accept, for each of
// the two secrets of a rotation.
func TestDeliverSignedHeaders(t *testing.T) {
	t.Parallel()
	oldSecret, oldKey := mustKey(t)
	newSecret, newKey := mustKey(t)
	refs := map[string]*standardwebhooks.Webhook{}
	for name, s := range map[string]string{"old": oldSecret, "new": newSecret} {
		refs[name], _ = standardwebhooks.NewWebhook(s)
	}
	var rc recorder
	verdicts := make(chan string, 8)
	recv := startReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		d := rc.record(r)
		for name, ref := range refs {
			if err := ref.Verify(d.body, d.header); err != nil {
				verdicts <- "reference, " + name + " secret: " + err.Error()
			}
		}
		for name, s := range map[string]string{"old": oldSecret, "new": newSecret} {
			if _, err := client.VerifyWebhook(s, d.header, d.body); err != nil {
				verdicts <- "client.VerifyWebhook, " + name + " secret: " + err.Error()
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "thanks")
	})

	body, err := json.Marshal(webhook.OrderRenewed(time.Now(), 10001, 10002))
	if err != nil {
		t.Fatal(err)
	}
	id, ts := webhook.NewMessageID(), time.Now()
	res := webhook.Deliver(context.Background(), testClient(t, 5*time.Second), recv.URL+"/hook", [][]byte{newKey, oldKey}, id, ts, body)
	if !res.Delivered() || res.Status != 200 || res.Err != nil || res.Retry() || res.Gone() {
		t.Fatalf("result %+v", res)
	}
	if res.Answer != "thanks" || res.Latency <= 0 {
		t.Errorf("answer %q, latency %v", res.Answer, res.Latency)
	}
	close(verdicts)
	for v := range verdicts {
		t.Error(v)
	}
	reqs := rc.all()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	h := reqs[0].header
	for name, want := range map[string]string{
		"webhook-id":        id,
		"webhook-timestamp": strconv.FormatInt(ts.Unix(), 10),
		"content-type":      "application/json",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if ua := h.Get("User-Agent"); !strings.Contains(ua, "certorder") {
		t.Errorf("User-Agent %q", ua)
	}
	if string(reqs[0].body) != string(body) {
		t.Errorf("body %s, want %s", reqs[0].body, body)
	}
}

// 503 is retried with the same webhook-id; 410 asks to disable the endpoint.
func TestDeliverStatuses(t *testing.T) {
	t.Parallel()
	var rc recorder
	var calls atomic.Int64
	recv := startReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		rc.record(r)
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "30")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		case 3:
			w.WriteHeader(http.StatusAccepted)
		default:
			http.Error(w, "no longer here", http.StatusGone)
		}
	})
	_, key := mustKey(t)
	hc := testClient(t, 5*time.Second)
	id := webhook.NewMessageID()
	body := []byte(`{"type":"order.expiring","timestamp":"2026-11-21T10:00:00Z","data":{}}`)
	deliver := func() webhook.Result {
		return webhook.Deliver(context.Background(), hc, recv.URL, [][]byte{key}, id, time.Now(), body)
	}

	r1 := deliver()
	if r1.Class != webhook.ClassStatus || r1.Status != 503 || !r1.Retry() || r1.RetryAfter != 30*time.Second || r1.Answer != "busy\n" {
		t.Fatalf("503: %+v", r1)
	}
	r2 := deliver()
	if r2.Status != 429 || !r2.Retry() || r2.RetryAfter < 80*time.Second || r2.RetryAfter > 91*time.Second {
		t.Fatalf("429: %+v", r2)
	}
	if r3 := deliver(); !r3.Delivered() || r3.Status != 202 {
		t.Fatalf("202: %+v", r3)
	}
	r4 := deliver()
	if !r4.Gone() || r4.Retry() || r4.Delivered() || r4.Status != 410 || r4.Err == nil {
		t.Fatalf("410: %+v", r4)
	}
	for i, d := range rc.all() {
		if d.header.Get("webhook-id") != id {
			t.Errorf("attempt %d: webhook-id %q, want %q", i+1, d.header.Get("webhook-id"), id)
		}
	}
}

// A receiver that never answers is cut at the client's timeout.
func TestDeliverTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	recv := startReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		case <-time.After(10 * time.Second):
		}
	})
	start := time.Now()
	res := deliverTo(t, testClient(t, 300*time.Millisecond), recv.URL)
	if res.Class != webhook.ClassTimeout || !res.Retry() || res.Status != 0 {
		t.Fatalf("%s %v, want timeout", res.Class, res.Err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("took %v with a 300ms timeout", took)
	}

	// The caller's deadline counts too; its cancellation is not the receiver's failure.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, key := mustKey(t)
	if res := webhook.Deliver(ctx, testClient(t, 5*time.Second), recv.URL, [][]byte{key}, "msg_1", time.Now(), nil); res.Class != webhook.ClassTimeout {
		t.Fatalf("context deadline: %s %v", res.Class, res.Err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if res := webhook.Deliver(ctx, testClient(t, 5*time.Second), recv.URL, [][]byte{key}, "msg_1", time.Now(), nil); res.Class != webhook.ClassCanceled || !res.Retry() {
		t.Fatalf("context canceled: %s %v", res.Class, res.Err)
	}
}

// A 2xx is a delivery even if the receiver then stalls sending its body;
// the stall is cut at the timeout.
func TestDeliverStalledAnswerBody(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok, and")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	start := time.Now()
	res := deliverTo(t, testClient(t, 300*time.Millisecond), recv.URL)
	if !res.Delivered() || res.Answer != "ok, and" {
		t.Fatalf("%+v", res)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("took %v", took)
	}
}

// A redirect is reported, not followed.
func TestDeliverRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var followed atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	recv := startReceiver(t, mux.ServeHTTP)
	res := deliverTo(t, testClient(t, 5*time.Second), recv.URL+"/hook")
	if res.Class != webhook.ClassStatus || res.Status != 307 || !res.Retry() || !strings.Contains(res.Err.Error(), "redirect") {
		t.Fatalf("%+v", res)
	}
	if n := followed.Load(); n != 0 {
		t.Fatalf("redirect followed %d times", n)
	}
}

// A huge answer is read only up to MaxAnswer, then the connection is closed:
// the receiver cannot write it all.
func TestDeliverHugeAnswer(t *testing.T) {
	t.Parallel()
	const total = 256 << 20
	written := make(chan int64, 1)
	recv := startReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 32<<10))
		var n int64
		deadline := time.Now().Add(10 * time.Second)
		for n < total && time.Now().Before(deadline) {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
		}
		written <- n
	})
	res := deliverTo(t, testClient(t, 5*time.Second), recv.URL)
	if !res.Delivered() || len(res.Answer) != webhook.MaxAnswer || strings.Trim(res.Answer, "x") != "" {
		t.Fatalf("class %s, answer of %d bytes", res.Class, len(res.Answer))
	}
	select {
	case n := <-written:
		if n >= total {
			t.Fatalf("the receiver wrote all %d bytes: the connection was not closed", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver is still writing")
	}
}

func TestDeliverConnectionFailures(t *testing.T) {
	t.Parallel()
	// A port nobody listens on: take one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + l.Addr().String() + "/"
	l.Close()
	if res := deliverTo(t, testClient(t, 5*time.Second), closedURL); res.Class != webhook.ClassRefused || !res.Retry() {
		t.Errorf("closed port: %s %v", res.Class, res.Err)
	}

	// TLS: a certificate the client does not trust, then one it does.
	var hits atomic.Int64
	recv := startTLSReceiver(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1); ok(w, r) })
	if res := deliverTo(t, testClient(t, 5*time.Second), recv.URL); res.Class != webhook.ClassTLS || !res.Retry() {
		t.Errorf("untrusted certificate: %s %v", res.Class, res.Err)
	}
	guard := &noPublicDial{}
	trusting := webhook.NewHTTPClient(webhook.Options{
		AllowPrivate: true, Timeout: 5 * time.Second, Control: guard.control,
		TLSConfig: &tls.Config{RootCAs: recv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs},
	})
	if res := deliverTo(t, trusting, recv.URL); !res.Delivered() || res.Status != 204 {
		t.Errorf("trusted certificate: %s %v", res.Class, res.Err)
	}
	if hits.Load() != 1 {
		t.Errorf("%d requests reached the TLS receiver, want 1", hits.Load())
	}

	// A name that does not resolve.
	lookup := webhook.NewHTTPClient(webhook.Options{AllowPrivate: true, Timeout: 5 * time.Second, Control: guard.control,
		LookupNetIP: func(context.Context, string, string) ([]netip.Addr, error) { return nil, errors.New("no such host") }})
	if res := deliverTo(t, lookup, "http://nowhere.example.com/"); res.Class != webhook.ClassDNS || !res.Retry() {
		t.Errorf("unresolvable name: %s %v", res.Class, res.Err)
	}
}

// What the caller got wrong is refused before any connection, and no error
// quotes the URL's query (it may hold the receiver's token).
func TestDeliverInvalid(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t, ok)
	hc := testClient(t, 5*time.Second)
	_, key := mustKey(t)
	url := recv.URL + "/hook?token=s3cr3t"
	for name, res := range map[string]webhook.Result{
		"message ID with a dot": webhook.Deliver(context.Background(), hc, url, [][]byte{key}, "msg.1", time.Now(), nil),
		"empty message ID":      webhook.Deliver(context.Background(), hc, url, [][]byte{key}, "", time.Now(), nil),
		"no key":                webhook.Deliver(context.Background(), hc, url, nil, "msg_1", time.Now(), nil),
		"no client":             webhook.Deliver(context.Background(), nil, url, [][]byte{key}, "msg_1", time.Now(), nil),
		"bad URL":               webhook.Deliver(context.Background(), hc, "http://[::1/?token=s3cr3t", [][]byte{key}, "msg_1", time.Now(), nil),
		"user in URL":           webhook.Deliver(context.Background(), hc, "http://me:s3cr3t@127.0.0.1:"+recv.port()+"/", [][]byte{key}, "msg_1", time.Now(), nil),
	} {
		if res.Class != webhook.ClassInvalid || res.Retry() || res.Err == nil {
			t.Errorf("%s: %s %v", name, res.Class, res.Err)
		} else if strings.Contains(res.Err.Error(), "s3cr3t") {
			t.Errorf("%s: error quotes the URL: %v", name, res.Err)
		}
	}
	if n := recv.conns.Load(); n != 0 {
		t.Fatalf("%d connections", n)
	}

	// A transport failure names the host only.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	res := webhook.Deliver(context.Background(), hc, "http://"+addr+"/hook?token=s3cr3t", [][]byte{key}, "msg_1", time.Now(), nil)
	if res.Err == nil || strings.Contains(res.Err.Error(), "s3cr3t") || !strings.Contains(res.Err.Error(), "127.0.0.1") {
		t.Fatalf("error %v", res.Err)
	}
}
