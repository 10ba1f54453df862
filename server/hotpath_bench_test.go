package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder/internal/credcache"
	"github.com/certorder/certorder/server"
)

// BenchmarkHotPath is a cached OrderInfo (10k orders, all cached) with the
// service set up as loadbench runs it (cmd/loadbench's serve arguments:
// no access log, no rate or failure limits, no per-IP cap; MaxInFlight,
// BodyTimeout, the audit trail, the metrics and the web page on), so that
// the figures that do not change with the machine's load — allocations
// and bytes a request, and instructions a request under
// valgrind --tool=callgrind with a fixed -benchtime=Nx — show what the
// service adds to net/http for issue 25's target:
//
//	go test -run '^$' -bench HotPath -benchmem ./server
//
// handler is Server.ServeHTTP alone, the request reused and a fresh header
// map a request as net/http gives one: what certorder allocates. loopback
// is a real http.Server (serve's timeouts) over a TCP connection on
// loopback, with a client that writes the request's bytes as wrk does and
// reads the answer; bare is the same with loadbench's bare handler.
func BenchmarkHotPath(b *testing.B) {
	h, key := benchServer(b, 10000, 64<<20, server.Config{
		NoAccessLog: true, Web: true, AuditRetention: 90 * 24 * time.Hour, Metrics: prometheus.NewRegistry(),
		Limits: server.Limits{MaxInFlight: 512, BodyTimeout: 5 * time.Second,
			AuthFailWindow: server.DefaultLimits.AuthFailWindow, AuthLockout: server.DefaultLimits.AuthLockout},
	})
	bodies := make([][]byte, 10000)
	for i := range bodies {
		bodies[i] = []byte(`{"AccessName":"alice","AccessKey":"` + key + `","action":"OrderInfo","orderId":` + strconv.Itoa(i+1) + `}`)
	}
	answer := func(id int) []byte {
		r, _ := http.NewRequest(http.MethodPost, "/api/digicert/", bytes.NewReader(bodies[id-1]))
		r.RemoteAddr = "127.0.0.1:40000"
		w := &discardWriter{h: http.Header{}, keep: true}
		h.ServeHTTP(w, r)
		if w.status != http.StatusOK {
			b.Fatalf("order %d: status %d", id, w.status)
		}
		return w.body.Bytes()
	}
	for id := 1; id <= len(bodies); id++ {
		answer(id) // every order cached
	}
	b.Run("handler", func(b *testing.B) {
		r, err := http.NewRequest(http.MethodPost, "/api/digicert/", nil)
		if err != nil {
			b.Fatal(err)
		}
		r.RemoteAddr = "127.0.0.1:40000"
		r.Header.Set("Content-Type", "application/json")
		var body bytes.Reader
		w := &discardWriter{}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			body.Reset(bodies[i%len(bodies)])
			i++
			r.Body, r.ContentLength = io.NopCloser(&body), body.Size()
			w.h, w.status = http.Header{}, 0
			h.ServeHTTP(w, r)
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
		}
	})
	b.Run("loopback", func(b *testing.B) {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 15 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
		serveLoopback(b, srv, bodies, func(ln net.Listener) net.Listener {
			l := server.LimitConns(ln, server.ConnLimits{PerIP: server.DefaultMaxConnsPerIP, Total: 57344, HeaderTimeout: srv.ReadHeaderTimeout}, nil)
			srv.ConnState = l.ConnState
			return l
		})
	})
	b.Run("bare", func(b *testing.B) {
		body := answer(1)
		serveLoopback(b, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		})}, bodies, nil)
	})
}

// TestHotPathAllocations holds what a cached OrderInfo allocates in the
// handler (BenchmarkHotPath/handler's request, the audit trail off: its
// writer allocates in the background) at today's 8, so that a new
// allocation on the hot path fails a test rather than waiting for a
// benchmark: the request ID and its header's slice (1), the decoded
// AccessName and AccessKey (2), the response header map's first entry
// (1), the cache's decoded order and its document (2), the test's
// header map and body reader (2).
func TestHotPathAllocations(t *testing.T) {
	h, key := benchServer(t, 10, 64<<20, server.Config{NoAccessLog: true, Metrics: prometheus.NewRegistry(),
		Limits: server.Limits{MaxInFlight: 512, BodyTimeout: 5 * time.Second}})
	body := []byte(`{"AccessName":"alice","AccessKey":"` + key + `","action":"OrderInfo","orderId":3}`)
	r, err := http.NewRequest(http.MethodPost, "/api/digicert/", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.RemoteAddr = "127.0.0.1:40000"
	var rd bytes.Reader
	w := &discardWriter{}
	serve := func() {
		rd.Reset(body)
		r.Body, r.ContentLength = io.NopCloser(&rd), rd.Size()
		w.h, w.status = http.Header{}, 0
		h.ServeHTTP(w, r)
	}
	serve() // the order cached
	if w.status != http.StatusOK {
		t.Fatalf("status %d", w.status)
	}
	if n := testing.AllocsPerRun(200, serve); n > 8 {
		t.Errorf("a cached OrderInfo allocates %.1f times in the handler, more than 8", n)
	}
}

// discardWriter is a ResponseWriter that keeps the status (and the body
// when keep is set). It takes a read deadline, as net/http's does, so that
// readBody's costs what it does under net/http (an unsupported one costs an
// error made with fmt).
type discardWriter struct {
	h      http.Header
	status int
	keep   bool
	body   bytes.Buffer
}

func (w *discardWriter) Header() http.Header             { return w.h }
func (w *discardWriter) SetReadDeadline(time.Time) error { return nil }
func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.keep {
		w.body.Write(p)
	}
	return len(p), nil
}

// serveLoopback serves srv on a loopback port (through limit, if not nil)
// and sends it the requests of bodies in turn on one keep-alive
// connection, each as wrk's script writes it, reading each answer whole
// before the next.
func serveLoopback(b *testing.B, srv *http.Server, bodies [][]byte, limit func(net.Listener) net.Listener) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if limit != nil {
		ln = limit(ln)
	}
	go srv.Serve(ln)
	defer srv.Close()
	reqs := make([][]byte, len(bodies))
	for i, body := range bodies {
		reqs[i] = fmt.Appendf(nil, "POST /api/digicert/ HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			ln.Addr(), len(body), body)
	}
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	rd := bufio.NewReaderSize(conn, 16<<10)
	var body []byte
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := conn.Write(reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		i++
		var err error
		if body, err = readAnswer(rd, body); err != nil {
			b.Fatal(err)
		}
	}
}

// readAnswer reads an answer of status 200 with a Content-Length into body.
func readAnswer(rd *bufio.Reader, body []byte) ([]byte, error) {
	n, status := -1, []byte(nil)
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			return body, err
		}
		if status == nil {
			status = append(body[:0], line...) // not kept past the check
		} else if len(line) <= 2 {
			break
		} else if l, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(l)))
		}
	}
	if string(status) != "HTTP/1.1 200 OK\r\n" || n < 0 {
		return body, fmt.Errorf("answer %q, Content-Length %d", status, n)
	}
	body = append(body[:0], make([]byte, n)...)
	_, err := io.ReadFull(rd, body)
	return body, err
}

// benchServer is the service on a SQLite store of n orders for alice (the
// store's cache on with cacheBytes, if not 0), and alice's key.
func benchServer(b testing.TB, n, cacheBytes int, cfg server.Config) (*server.Server, string) {
	ctx := context.Background()
	s, text := benchStore(b, n)
	var src credcache.Source
	if cacheBytes > 0 {
		var err error
		if src, err = s.(credcache.Sourcer).CacheSource(ctx, credcache.SourceConfig{}); err != nil {
			b.Fatal(err)
		}
	}
	cfg.Credentials = credcache.NewStore(s, src, cacheBytes, server.DefaultStoreTimeout)
	cfg.CASegment = "digicert"
	h, err := server.New(s, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	return h, text
}
