package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/testdb"
)

// Fair admission at the connection total (docs/OPERATIONS.md, "Connections
// in all"): serve under prlimit --nofile=256 holds 128 connections; four
// addresses (127.0.0.2 to .5) churn 60 connections each, a new one as fast
// as they can, the oldest closed. Meanwhile a client whose headers arrive
// in three parts 0.4 s apart, a keep-alive client asking every 0.2 s and a
// client on a new connection each time are all answered, every time, on
// the connections they opened. Before, the connection idle longest was
// closed to admit a new one, and one whose headers were arriving counted as
// idle: the review saw the slow client answered 0 times of 18, the
// keep-alive one failing 9 of 18.
func TestConnFairness(t *testing.T) {
	t.Parallel()
	p, addr, metricsAddr := serveWithin(t, 256)
	if !strings.Contains(p.log.String(), "max_conns=128") {
		t.Fatalf("not at 128 connections:\n%s", p.log.String())
	}

	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	var attackers sync.WaitGroup
	dials := make([]int, 4)
	for i := range dials {
		attackers.Go(func() { dials[i] = churn(ctx, net.IPv4(127, 0, 0, byte(2+i)), addr, 60) })
	}
	defer attackers.Wait()
	defer stop()
	if !poll.Within(30*time.Second, func() bool { return idleClosed(t, metricsAddr) > 0 }) {
		t.Fatalf("the attackers did not reach the total:\n%s", p.log.String())
	}

	var slow, keepAlive, fresh answers
	var clients sync.WaitGroup
	clients.Go(func() {
		for range 6 {
			slow.add(ask(from(10), addr, 400*time.Millisecond))
		}
	})
	clients.Go(func() {
		c, err := from(11).Dial("tcp", addr)
		if err != nil {
			keepAlive.add(err)
			return
		}
		defer c.Close()
		rd := bufio.NewReader(c)
		for range 18 {
			keepAlive.add(getHealthz(c, rd, 0))
			time.Sleep(200 * time.Millisecond) // idle between requests, as a keep-alive client is
		}
	})
	clients.Go(func() {
		for range 18 {
			fresh.add(ask(from(12), addr, 0))
		}
	})
	clients.Wait()
	stop()
	attackers.Wait()
	for _, c := range []struct {
		name string
		a    *answers
		want int
	}{{"slow headers", &slow, 6}, {"keep-alive", &keepAlive, 18}, {"new connections", &fresh, 18}} {
		if c.a.ok != c.want {
			t.Errorf("%s: %d answered of %d; failures: %v", c.name, c.a.ok, c.want, c.a.errs)
		}
	}
	t.Logf("attackers dialled %v connections; %v closed to admit others; slow %d/6, keep-alive %d/18, new %d/18",
		dials, idleClosed(t, metricsAddr), slow.ok, keepAlive.ok, fresh.ok)
}

// serveWithin starts serve on SQLite with a limit of nofile descriptors
// (prlimit), webhooks off, and the metrics listener; it returns the process
// and the API's and the metrics' addresses.
func serveWithin(t *testing.T, nofile int, args ...string) (p *process, addr, metricsAddr string) {
	t.Helper()
	limit := fmt.Sprintf("--nofile=%d:%d", nofile, nofile)
	p = startProcess(t, "prlimit", append([]string{limit, buildBinary(t), "serve", "--addr", "127.0.0.1:0", "--db", testdb.SQLite(t),
		"--webhooks=false", "--metrics-addr", "127.0.0.1:0"}, args...)...)
	addr = strings.TrimPrefix(strings.TrimSuffix(p.endpoint, "/api/digicert/"), "http://")
	return p, addr, p.waitFor(p.log, `msg="metrics listening" addr=(\S+)`)
}

// churn holds up to held connections from ip to addr, dialling a new one as
// fast as it can and closing the oldest, until ctx ends; it returns how
// many it dialled (at most 100,000).
func churn(ctx context.Context, ip net.IP, addr string, held int) int {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: time.Second}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	n := 0
	for ; n < 100000 && ctx.Err() == nil; n++ {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			continue
		}
		if conns = append(conns, c); len(conns) > held {
			conns[0].Close()
			conns = conns[1:]
		}
	}
	return n
}

// from dials from 127.0.0.host.
func from(host byte) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, host)}, Timeout: 5 * time.Second}
}

// ask sends one request on a new connection, its headers in three parts
// pause apart, and reads the answer.
func ask(d *net.Dialer, addr string, pause time.Duration) error {
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return getHealthz(c, bufio.NewReader(c), pause)
}

// getHealthz sends GET /healthz on c, in three parts pause apart, and reads
// the answer: an error unless it is a 200.
func getHealthz(c net.Conn, rd *bufio.Reader, pause time.Duration) error {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for i, part := range []string{"GET /healthz HTTP/1.1\r\n", "Host: certorder.test\r\n", "\r\n"} {
		if i > 0 && pause > 0 {
			time.Sleep(pause) // the client's own pace, the behaviour under test
		}
		if _, err := io.WriteString(c, part); err != nil {
			return err
		}
	}
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &statusError{resp.StatusCode}
	}
	return nil
}

type statusError struct{ status int }

func (e *statusError) Error() string { return http.StatusText(e.status) }

// answers counts a client's answers and keeps its failures.
type answers struct {
	mu   sync.Mutex
	ok   int
	errs []string
}

func (a *answers) add(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		a.ok++
	} else {
		a.errs = append(a.errs, err.Error())
	}
}

// idleClosed reads certorder_connections_idle_closed_total.
func idleClosed(t *testing.T, metricsAddr string) int {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^certorder_connections_idle_closed_total (\d+)`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
