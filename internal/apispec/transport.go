package apispec

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Transport checks with Check every answer of a certorder endpoint it
// carries: a request whose path is /api or below, answered with
// X-Request-Id (certorder sends it with every API answer; a test's fake
// server does not). A test binary puts it in http.DefaultTransport, so
// that the answers of every client in it are checked: the test helpers',
// the Go client's, the member commands'.
type Transport struct {
	Base http.RoundTripper

	mu      sync.Mutex
	errs    []error
	checked atomic.Int64 // distinct exchanges checked
	seen    sync.Map     // of the exchanges' SHA-256 (first)
}

// RoundTrip sends the request, and checks the answer when it is an API one.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isAPIPath(req.URL.Path) {
		return t.Base.RoundTrip(req)
	}
	// The body is copied as it is sent, not read first: some tests send
	// theirs slowly, or never finish it.
	var sent lockedBuffer
	if req.Body != nil {
		req = req.Clone(req.Context())
		req.Body = teeCloser{io.TeeReader(req.Body, &sent), req.Body}
	}
	resp, err := t.Base.RoundTrip(req)
	if err != nil || resp.Header.Get("X-Request-Id") == "" {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp, nil // the caller meets the error reading what there is
	}
	reqBody := sent.Bytes()
	if !t.first(resp.StatusCode, reqBody, body) {
		return resp, nil
	}
	t.checked.Add(1)
	if err := Check(resp.StatusCode, resp.Header, reqBody, body); err != nil {
		t.mu.Lock()
		t.errs = append(t.errs, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err))
		t.mu.Unlock()
	}
	return resp, nil
}

// first reports whether this exchange is checked for the first time: a
// load test repeats the same answers thousands of times, and checking each
// (one at a time: Check holds a lock) would throttle the load it makes.
func (t *Transport) first(status int, reqBody, body []byte) bool {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n%d\n", status, len(body))
	h.Write(body)
	h.Write(reqBody) // the request is checked too when the answer is a success
	_, seen := t.seen.LoadOrStore([sha256.Size]byte(h.Sum(nil)), true)
	return !seen
}

// Result says how many answers were checked, and what did not match.
func (t *Transport) Result() (checked int64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checked.Load(), errors.Join(t.errs...)
}

func isAPIPath(p string) bool {
	c := strings.ToLower(path.Clean("/" + p))
	return c == "/api" || strings.HasPrefix(c, "/api/")
}

type teeCloser struct {
	io.Reader
	io.Closer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// Install puts a Transport in front of http.DefaultTransport, for a
// TestMain; call Done with m.Run's code.
func Install() *Transport {
	t := &Transport{Base: http.DefaultTransport}
	http.DefaultTransport = t
	return t
}

// Done is the test binary's exit code: code, or 1 when an answer did not
// match the document (each is printed).
func (t *Transport) Done(code int) int {
	n, err := t.Result()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: API answers that do not match docs/openapi.yaml:\n%v\n", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "apispec: %d API answers checked against docs/openapi.yaml\n", n)
	}
	return code
}
