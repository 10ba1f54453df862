package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/certorder/certorder/webhook"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url          string
		allowPrivate bool
		want         error // nil, ErrBlocked or ErrInvalidURL
	}{
		{"https://hooks.example.com/certorder", false, nil},
		{"https://hooks.example.com:8443/p?token=x", false, nil},
		{"https://93.184.216.34/hook", false, nil},
		{"https://[2606:4700:4700::1111]/hook", false, nil},
		{"https://[::ffff:93.184.216.34]/hook", false, nil},
		{"http://hooks.example.com/", true, nil},
		{"http://127.0.0.1:8080/", true, nil},
		{"https://localhost/", true, nil},

		{"http://hooks.example.com/", false, webhook.ErrInvalidURL},
		{"ftp://hooks.example.com/", true, webhook.ErrInvalidURL},
		{"//hooks.example.com/", false, webhook.ErrInvalidURL},
		{"/hook", false, webhook.ErrInvalidURL},
		{"hooks.example.com", false, webhook.ErrInvalidURL},
		{"https:hooks.example.com", false, webhook.ErrInvalidURL},
		{"https:///hook", false, webhook.ErrInvalidURL},
		{"https://user:pw@hooks.example.com/", false, webhook.ErrInvalidURL},
		{"https://user@hooks.example.com/", true, webhook.ErrInvalidURL},
		{"https://hooks.example.com:0/", false, webhook.ErrInvalidURL},
		{"https://hooks.example.com:70000/", false, webhook.ErrInvalidURL},
		{"https://hooks.example.com:/", false, webhook.ErrInvalidURL},
		{"https://hooks.example.com/\x7f", false, webhook.ErrInvalidURL},
		{"https://127.1/", false, webhook.ErrInvalidURL},
		{"https://2130706433/", false, webhook.ErrInvalidURL},
		{"https://0x7f.0.0.1/", false, webhook.ErrInvalidURL},
		{"https://hooks.example.com/" + strings.Repeat("a", 2048), false, webhook.ErrInvalidURL},

		{"https://127.0.0.1/", false, webhook.ErrBlocked},
		{"https://127.8.9.10:8443/", false, webhook.ErrBlocked},
		{"https://[::1]/", false, webhook.ErrBlocked},
		{"https://10.1.2.3/", false, webhook.ErrBlocked},
		{"https://172.16.0.1/", false, webhook.ErrBlocked},
		{"https://172.31.255.255/", false, webhook.ErrBlocked},
		{"https://192.168.1.1/", false, webhook.ErrBlocked},
		{"https://169.254.169.254/latest/meta-data/", false, webhook.ErrBlocked},
		{"https://100.64.0.1/", false, webhook.ErrBlocked},
		{"https://100.127.255.254/", false, webhook.ErrBlocked},
		{"https://0.0.0.0/", false, webhook.ErrBlocked},
		{"https://224.0.0.1/", false, webhook.ErrBlocked},
		{"https://255.255.255.255/", false, webhook.ErrBlocked},
		{"https://192.0.2.1/", false, webhook.ErrBlocked},
		{"https://[::]/", false, webhook.ErrBlocked},
		{"https://[fe80::1]/", false, webhook.ErrBlocked},
		{"https://[fe80::1%25eth0]/", false, webhook.ErrBlocked},
		{"https://[fc00::1]/", false, webhook.ErrBlocked},
		{"https://[fd12:3456::1]/", false, webhook.ErrBlocked},
		{"https://[ff02::1]/", false, webhook.ErrBlocked},
		{"https://[::ffff:127.0.0.1]/", false, webhook.ErrBlocked},
		{"https://[::ffff:10.0.0.1]/", false, webhook.ErrBlocked},
		{"https://[::ffff:169.254.169.254]/", false, webhook.ErrBlocked},
		{"https://[64:ff9b::7f00:1]/", false, webhook.ErrBlocked},
		{"https://[2001:db8::1]/", false, webhook.ErrBlocked},
		{"https://localhost/", false, webhook.ErrBlocked},
		{"https://LocalHost./", false, webhook.ErrBlocked},
		{"https://api.localhost:8443/", false, webhook.ErrBlocked},
	} {
		err := webhook.CheckURL(tc.url, tc.allowPrivate)
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("CheckURL(%q, %v) = %v, want nil", tc.url, tc.allowPrivate, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("CheckURL(%q, %v) = %v, want %v", tc.url, tc.allowPrivate, err, tc.want)
		}
	}
	// The error names the host, never the query, which may hold the receiver's token.
	err := webhook.CheckURL("http://hooks.example.com/hook?token=s3cr3t", false)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v", err)
	}
}

// noPublicDial is a Control hook for every test client: any address that is
// not loopback is refused before connecting, so that no test ever reaches
// past this machine even if the rule under test were broken. It records
// what it stopped.
type noPublicDial struct {
	mu      sync.Mutex
	stopped []string
}

var errStopped = errors.New("test: dial to a non-loopback address stopped")

func (n *noPublicDial) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err == nil && ap.Addr().Unmap().IsLoopback() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopped = append(n.stopped, address)
	return errStopped
}

func (n *noPublicDial) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.stopped...)
}

func deliverTo(t *testing.T, hc *http.Client, url string) webhook.Result {
	t.Helper()
	_, key := mustKey(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return webhook.Deliver(ctx, hc, url, [][]byte{key}, webhook.NewMessageID(), time.Now(), []byte(`{}`))
}

// A loopback receiver is never connected to without AllowPrivate, whether
// named by address or by a name the system resolver maps to loopback; with
// AllowPrivate it is reached.
func TestClientRefusesLoopback(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	recv := startTLSReceiver(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1); ok(w, r) })
	guard := &noPublicDial{}
	strict := webhook.NewHTTPClient(webhook.Options{Timeout: 5 * time.Second, TLSConfig: recv.Client().Transport.(*http.Transport).TLSClientConfig, Control: guard.control})

	for _, url := range []string{
		recv.URL,                                 // https://127.0.0.1:port
		"https://localhost:" + recv.port() + "/", // the system resolver: 127.0.0.1 and ::1
		"https://[::ffff:127.0.0.1]:" + recv.port() + "/",
	} {
		res := deliverTo(t, strict, url)
		if res.Class != webhook.ClassBlocked || !errors.Is(res.Err, webhook.ErrBlocked) || !res.Retry() {
			t.Errorf("%s: %s %v, want blocked", url, res.Class, res.Err)
		}
	}
	// Plain http is refused before any connection, too.
	if res := deliverTo(t, strict, "http://127.0.0.1:"+recv.port()+"/"); res.Class != webhook.ClassInvalid || !errors.Is(res.Err, webhook.ErrInvalidURL) {
		t.Errorf("http without AllowPrivate: %s %v", res.Class, res.Err)
	}

	open := webhook.NewHTTPClient(webhook.Options{AllowPrivate: true, Timeout: 5 * time.Second, TLSConfig: recv.Client().Transport.(*http.Transport).TLSClientConfig, Control: guard.control})
	if res := deliverTo(t, open, recv.URL); !res.Delivered() {
		t.Fatalf("with AllowPrivate: %s %v", res.Class, res.Err)
	}
	// The receiver has accepted the AllowPrivate connection, so it would
	// have accepted any earlier one: there was none.
	if n, h := recv.conns.Load(), hits.Load(); n != 1 || h != 1 {
		t.Fatalf("receiver saw %d connections and %d requests, want 1 and 1", n, h)
	}
	if s := guard.list(); len(s) != 0 {
		t.Fatalf("non-loopback dials attempted: %v", s)
	}
}

// DNS rebinding: the name first answers a public address (accepted by the
// rule, and stopped by the test's hook before any packet leaves), then
// 127.0.0.1: that dial is refused and nothing connects. The check is made
// when dialling, not once when the URL is checked.
func TestClientRefusesDNSRebinding(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	recv := startReceiver(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1); ok(w, r) })
	public := netip.MustParseAddr("93.184.216.34")
	var lookups atomic.Int64
	lookup := func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if host != "hooks.example.com" {
			return nil, errors.New("no such host")
		}
		if lookups.Add(1) == 1 {
			return []netip.Addr{public}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	guard := &noPublicDial{}
	strict := webhook.NewHTTPClient(webhook.Options{Timeout: 5 * time.Second, LookupNetIP: lookup, Control: guard.control})
	url := "https://hooks.example.com:" + recv.port() + "/hook"
	if err := webhook.CheckURL(url, false); err != nil {
		t.Fatalf("CheckURL: %v", err) // a name passes the URL check: the dial is where it is judged
	}

	first := deliverTo(t, strict, url)
	if !errors.Is(first.Err, errStopped) {
		t.Fatalf("first delivery (public address): %s %v, want the test hook's stop", first.Class, first.Err)
	}
	if s := guard.list(); len(s) != 1 || s[0] != net.JoinHostPort(public.String(), recv.port()) {
		t.Fatalf("stopped dials %v, want the public address once", s)
	}

	second := deliverTo(t, strict, url)
	if second.Class != webhook.ClassBlocked || !errors.Is(second.Err, webhook.ErrBlocked) {
		t.Fatalf("second delivery (rebound to 127.0.0.1): %s %v, want blocked", second.Class, second.Err)
	}
	if n := lookups.Load(); n != 2 {
		t.Fatalf("%d lookups, want 2", n)
	}

	// The same name with AllowPrivate reaches the receiver: the refusal above was the rule's.
	open := webhook.NewHTTPClient(webhook.Options{AllowPrivate: true, Timeout: 5 * time.Second, LookupNetIP: lookup, Control: guard.control})
	if res := deliverTo(t, open, "http://hooks.example.com:"+recv.port()+"/hook"); !res.Delivered() {
		t.Fatalf("with AllowPrivate: %s %v", res.Class, res.Err)
	}
	if n, h := recv.conns.Load(), hits.Load(); n != 1 || h != 1 {
		t.Fatalf("receiver saw %d connections and %d requests, want 1 and 1", n, h)
	}
	if s := guard.list(); len(s) != 1 {
		t.Fatalf("stopped dials %v, want only the first", s)
	}
}

// A name answering both a public and a loopback address: each address is
// judged as it is dialled.
func TestClientChecksEveryAddress(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t, ok)
	guard := &noPublicDial{}
	lookup := func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("2606:4700:4700::1111")}, nil
	}
	strict := webhook.NewHTTPClient(webhook.Options{Timeout: 5 * time.Second, LookupNetIP: lookup, Control: guard.control})
	res := deliverTo(t, strict, "https://hooks.example.com:"+recv.port()+"/")
	if res.Delivered() || recv.conns.Load() != 0 {
		t.Fatalf("delivered %v, %d connections", res.Delivered(), recv.conns.Load())
	}
	if s := guard.list(); len(s) != 1 || !strings.Contains(s[0], "2606:4700:4700::1111") {
		t.Fatalf("stopped dials %v, want the public IPv6 address", s)
	}
}

// A proxy in the environment is not used: it would connect on our behalf,
// past the address check. net/http reads the environment once per process,
// so the test runs in a child process of its own, where this test is the
// first to read it.
func TestClientIgnoresEnvironmentProxy(t *testing.T) {
	if os.Getenv("WEBHOOK_TEST_PROXY_CHILD") != "1" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestClientIgnoresEnvironmentProxy$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "WEBHOOK_TEST_PROXY_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestClientIgnoresEnvironmentProxy") {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")

	recv := startReceiver(t, ok)
	url := "http://hooks.example.com:" + recv.port() + "/"
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	if p, err := http.ProxyFromEnvironment(req); err != nil || p == nil {
		t.Fatalf("the environment names no proxy for %s (%v, %v): the test proves nothing", url, p, err)
	}
	lookup := func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	guard := &noPublicDial{}
	hc := webhook.NewHTTPClient(webhook.Options{AllowPrivate: true, Timeout: 5 * time.Second, LookupNetIP: lookup, Control: guard.control})
	if res := deliverTo(t, hc, url); !res.Delivered() {
		t.Fatalf("%s %v", res.Class, res.Err)
	}
	if n := proxied.Load(); n != 0 {
		t.Fatalf("the proxy saw %d requests", n)
	}
	if recv.conns.Load() != 1 {
		t.Fatalf("the receiver saw %d connections, want 1", recv.conns.Load())
	}
}
