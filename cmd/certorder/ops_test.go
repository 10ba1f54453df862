package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/apispec"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
)

// selfSigned writes a certificate for 127.0.0.1 with the given serial and its key.
func selfSigned(t *testing.T, dir string, serial int64) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "certorder test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(name+".tmp", pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(name+".tmp", name); err != nil {
			t.Fatal(err)
		}
	}
	write(keyFile, "EC PRIVATE KEY", kder)
	write(certFile, "CERTIFICATE", der)
	return certFile, keyFile, cert
}

// HTTPS, a certificate reloaded on SIGHUP, and the metrics listener.
func TestServeTLSAndMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, first := selfSigned(t, dir, 1)
	c := newCLI(t, testdb.SQLite(t))
	c.env["CERTORDER_TLS_CERT"], c.env["CERTORDER_TLS_KEY"] = certFile, keyFile
	endpoint, stdout, stderr := startServeLog(t, c, "--demo", "--metrics-addr", "127.0.0.1:0")
	if !strings.HasPrefix(endpoint, "https://") {
		t.Fatalf("endpoint %s", endpoint)
	}
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]

	roots := x509.NewCertPool()
	roots.AddCert(first)
	servedSerial := func() int64 {
		t.Helper()
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
		resp, err := hc.Post(endpoint, "application/json", strings.NewReader(request("demo", key, "Auth", "")))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("Auth over HTTPS: %d", resp.StatusCode)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	if s := servedSerial(); s != 1 {
		t.Fatalf("serial %d", s)
	}
	// TLS 1.2 offers AEAD suites only: a client that speaks only CBC suites
	// is refused; one that speaks GCM is served.
	handshake := func(suites ...uint16) error {
		u, _ := url.Parse(endpoint)
		conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12, CipherSuites: suites,
			ServerName: "127.0.0.1"})
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := handshake(tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
		tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA); err == nil {
		t.Error("a TLS 1.2 client offering only CBC suites was served")
	}
	if err := handshake(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); err != nil {
		t.Errorf("a TLS 1.2 client offering GCM: %v", err)
	}
	_, _, second := selfSigned(t, dir, 2)
	roots.AddCert(second)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !poll.Within(10*time.Second, func() bool { return servedSerial() == 2 }) {
		t.Fatal("SIGHUP did not load the new certificate")
	}

	addr := regexp.MustCompile(`msg="metrics listening" addr=(\S+)`).FindStringSubmatch(stderr.String())
	if addr == nil {
		t.Fatalf("no metrics address in the log:\n%s", stderr.String())
	}
	resp, err := http.Get("http://" + addr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`certorder_requests_total{action="Auth",outcome="ok"} `, "certorder_build_info{", "go_goroutines", "process_resident_memory_bytes"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr[1] + path)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: %v %v", path, resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	if strings.Contains(stderr.String(), key) {
		t.Error("the log holds the API key")
	}
}

// SIGHUP without TLS (systemctl reload) is logged and the service keeps
// serving: the signal's default action would end the process, and the
// test binary with it.
func TestServeSIGHUPWithoutTLS(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	endpoint, stdout, stderr := startServeLog(t, c, "--demo")
	key := regexp.MustCompile(`AccessKey:\s+(\S+)`).FindStringSubmatch(stdout.String())[1]
	auth := func() {
		t.Helper()
		resp, err := http.Post(endpoint, "application/json", strings.NewReader(request("demo", key, "Auth", "")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("Auth: %d", resp.StatusCode)
		}
	}
	auth()
	for i := 0; i < 2; i++ {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	if !poll.Within(10*time.Second, func() bool { return strings.Contains(stderr.String(), "SIGHUP: nothing to reload") }) {
		t.Fatalf("no reload line in the log:\n%s", stderr.String())
	}
	auth()
}

// startServeLog is startServe that also returns the log.
func startServeLog(t *testing.T, c *cli, args ...string) (string, *syncBuffer, *syncBuffer) {
	t.Helper()
	stderr := &syncBuffer{}
	endpoint, stdout := startServeWith(t, c, stderr, args...)
	return endpoint, stdout, stderr
}

// buildBinary gives the tests that need a real process a certorder to run:
// this test binary under the name certorder (a symbolic link in a directory
// of its own that TestMain removes), which TestMain turns into certorder's
// main and nothing else. It is the same code as a go build of the command,
// without the seconds of linking one more binary before the first process
// test can start (TestVersion builds one, to check what -ldflags sets); with
// -short the tests that need it are skipped.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs certorder as a process: not with -short")
	}
	built.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			built.err = err
			return
		}
		if built.dir, err = os.MkdirTemp("", "certorder-test-bin-"); err != nil {
			built.err = err
			return
		}
		bin := filepath.Join(built.dir, "certorder")
		if built.err = os.Symlink(self, bin); built.err == nil {
			built.bin = bin
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// built is the binary buildBinary made.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "certorder" { // run by a process test (buildBinary)
		main()
		os.Exit(0)
	}
	// These tests wait on processes, timers and the network. At 8 at once,
	// the slots were held by tests waiting out their processes and timers
	// while TestBrowser, the longest, waited 10-15 s for one (issue 41):
	// at 16 the package took 23 s instead of 29 s, at load 15-19, for
	// the same CPU.
	testdb.WaitBoundParallelAt(16)
	// For TestACMEWithLego's Pebble, the only reader: set here so that the
	// test can run in parallel, which t.Setenv forbids.
	os.Setenv("PEBBLE_VA_NOSLEEP", "1")
	os.Setenv("PEBBLE_WFE_NONCEREJECT", "0") // Pebble refuses 5% of good nonces by default
	// The collector ran for about a quarter of this process's CPU at the
	// default 100 (the CLI commands, in-process servers and simulators of
	// many parallel tests, each heap short-lived); 400 took a tenth less CPU.
	debug.SetGCPercent(400)
	spec := apispec.Install() // every API answer of these tests is checked against docs/openapi.yaml
	code := spec.Done(m.Run())
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// process is "certorder serve" running as an OS process of its own.
type process struct {
	t        *testing.T
	cmd      *exec.Cmd
	endpoint string
	stdout   *syncBuffer
	log      *syncBuffer   // stderr
	logDone  chan struct{} // closed once stderr is drained
}

// startProcess runs bin with args and waits until it listens. A process
// still running when the test ends is killed.
func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{t: t, cmd: exec.Command(bin, args...), stdout: &syncBuffer{}, log: &syncBuffer{}, logDone: make(chan struct{})}
	p.cmd.Stdout = p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	go func() {
		defer close(p.logDone)
		io.Copy(p.log, stderr)
	}()
	p.endpoint = p.waitFor(p.log, `listening on (\S+)`)
	return p
}

// waitFor waits until out holds a match of re and returns its first group.
func (p *process) waitFor(out *syncBuffer, re string) string {
	p.t.Helper()
	pattern := regexp.MustCompile(re)
	var m []string
	if !poll.Within(30*time.Second, func() bool { m = pattern.FindStringSubmatch(out.String()); return m != nil }) {
		p.t.Fatalf("no %s in the output:\n%s\n%s", re, p.stdout.String(), p.log.String())
	}
	return m[1]
}

// SIGTERM under load, measured by the clients: every request sent before
// the signal gets its 200, on keep-alive and new connections alike; the
// server drains, stops accepting, finishes what it accepted, and exits 0.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	p := startProcess(t, bin, "serve", "--demo", "--addr", "127.0.0.1:0", "--db", testdb.SQLite(t),
		"--log-format", "json", "--rate-limit", "0", "--ip-rate-limit", "0",
		"--shutdown-drain", "500ms") // the load keeps a drain going to its end: 2 s of it took 2 s of both cores
	endpoint := p.endpoint
	key := p.waitFor(p.stdout, `AccessKey:\s+(\S+)`) // stdout travels in a pipe of its own

	var signalled atomic.Int64 // UnixNano of the signal; 0 before
	var okBefore, okAfter, failedAfter atomic.Int64
	var failedBefore []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	// The load goes on until 5 seconds after the signal.
	over := func() bool { s := signalled.Load(); return s != 0 && time.Since(time.Unix(0, s)) > 5*time.Second }
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half the clients keep connections alive, half open one a request.
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: i%2 == 1}}
			for n := 0; n < 100000 && !over(); n++ {
				sent := time.Now().UnixNano()
				before := signalled.Load() == 0
				resp, err := hc.Post(endpoint, "application/json", strings.NewReader(request("demo", key, "OrderInfo", "10003")))
				status := 0
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = resp.StatusCode
				}
				switch {
				case status == 200 && before:
					okBefore.Add(1)
				case status == 200:
					okAfter.Add(1)
				case before:
					mu.Lock()
					failedBefore = append(failedBefore, fmt.Sprintf("sent %v before the signal: %d %v",
						time.Duration(signalled.Load()-sent), status, err))
					mu.Unlock()
				default:
					failedAfter.Add(1) // the listener is closed: expected
					if err != nil {
						return
					}
				}
			}
		}()
	}
	// Until the load is under way: 100 answers before the signal.
	warm := poll.Within(30*time.Second, func() bool { return okBefore.Load() >= 100 })
	signalled.Store(time.Now().UnixNano())
	if !warm {
		wg.Wait()
		t.Fatalf("only %d answers in 30 s", okBefore.Load())
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	<-p.logDone
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("serve exited with %v", err)
	}
	t.Logf("clients: %d answered before the signal, %d after it (draining), %d refused after it, %d failed before it",
		okBefore.Load(), okAfter.Load(), failedAfter.Load(), len(failedBefore))
	if len(failedBefore) > 0 || okBefore.Load() == 0 {
		t.Fatalf("requests sent before the signal failed:\n%s", strings.Join(failedBefore, "\n"))
	}
	if !strings.Contains(p.log.String(), `"msg":"stopped"`) {
		t.Fatal("no orderly stop in the log")
	}
}

// A client that sends its headers slowly is cut off after --read-header-timeout.
func TestReadHeaderTimeout(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	endpoint, _ := startServe(t, c, "--read-header-timeout", "300ms")
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /api/digicert/ HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	b, err := io.ReadAll(conn) // the server closes the connection
	if err != nil {
		t.Fatalf("the server kept the slow connection: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("closed after %v", took)
	}
	t.Logf("closed after %v with %q", time.Since(start), b)
}
