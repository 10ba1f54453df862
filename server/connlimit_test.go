package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/certorder/certorder/internal/poll"
)

// fakeConn is a connection from remote, never read or written: the limits
// look at the address alone (the process test TestConnBudget dials real
// ones on loopback).
type fakeConn struct {
	net.Conn
	remote net.Addr
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr       { return c.remote }
func (c *fakeConn) Close() error               { c.closed = true; return nil }
func (c *fakeConn) Read(b []byte) (int, error) { return copy(b, "P"), nil }

// admit offers a connection from addr to l as Accept does: it returns the
// limiter's connection (nil if refused) and the idle one closed for it.
func admit(t *testing.T, l *ConnLimiter, addr string) (net.Conn, *fakeConn) {
	t.Helper()
	lc, victim, reason := l.admit(&fakeConn{remote: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))})
	if reason != "" {
		l.refused.WithLabelValues(reason).Inc()
		return nil, nil
	}
	l.ConnState(lc, http.StateNew)
	if victim != nil {
		return lc, victim.Conn.(*fakeConn)
	}
	return lc, nil
}

// Per address: IPv4 one by one, IPv6 by /64 with PerIP, by /56 with
// PrefixConnsFactor × PerIP; trusted peers are not capped.
func TestConnLimitsPerAddress(t *testing.T) {
	t.Parallel()
	l := LimitConns(nil, ConnLimits{PerIP: 2, Exempt: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, nil)
	admitted := func(addrs ...string) (n int) {
		for _, a := range addrs {
			if c, _ := admit(t, l, a); c != nil {
				n++
			}
		}
		return n
	}
	if n := admitted("192.0.2.1:1", "192.0.2.1:2", "192.0.2.1:3", "192.0.2.2:1"); n != 3 {
		t.Errorf("IPv4: %d admitted, want 3", n)
	}
	// One /64: two addresses of it count as one.
	if n := admitted("[2001:db8:0:1::1]:1", "[2001:db8:0:1::2]:1", "[2001:db8:0:1::3]:1"); n != 2 {
		t.Errorf("one /64: %d admitted, want 2", n)
	}
	// The /56 holds 4 × 2 = 8 however many /64s: 2 of 2001:db8:0:1::/64
	// already, then 3 more /64s of 2 each, then no more.
	var wide []string
	for i := 2; i <= 5; i++ {
		for j := 1; j <= 2; j++ {
			wide = append(wide, fmt.Sprintf("[2001:db8:0:%x::%d]:1", i, j))
		}
	}
	if n := admitted(wide...); n != 6 {
		t.Errorf("one /56: %d more admitted, want 6", n)
	}
	if n := admitted("[2001:db8:0:100::1]:1", "[::ffff:192.0.2.9]:1"); n != 2 { // another /56; IPv4 mapped
		t.Errorf("another /56 and a mapped IPv4: %d admitted, want 2", n)
	}
	if n := admitted("10.1.1.1:1", "10.1.1.1:2", "10.1.1.1:3"); n != 3 {
		t.Errorf("a trusted proxy: %d admitted, want 3", n)
	}
	for reason, want := range map[string]float64{reasonPerAddress: 2, reasonPerPrefix: 2, reasonTotal: 0} {
		if got := testutil.ToFloat64(l.refused.WithLabelValues(reason)); got != want {
			t.Errorf("refused %s: %v, want %v", reason, got, want)
		}
	}
}

// At Total, a new connection is admitted by closing an idle connection
// (a keep-alive between requests, or one that sent nothing yet) of the
// client holding the most connections, if it holds more than the new
// connection's client (else one of the new client's own); a connection
// whose request is arriving (within HeaderTimeout) or being served
// never; with none to close, the new one is refused. A closed connection
// frees its place.
func TestConnLimitsTotal(t *testing.T) {
	t.Parallel()
	l := LimitConns(nil, ConnLimits{PerIP: 64, Total: 5, HeaderTimeout: time.Hour}, nil)
	a1, _ := admit(t, l, "192.0.2.1:1") // a holds 3, b 2
	a2, _ := admit(t, l, "192.0.2.1:2")
	a3, _ := admit(t, l, "192.0.2.1:3")
	b1, _ := admit(t, l, "192.0.2.2:1")
	b2, _ := admit(t, l, "192.0.2.2:2")
	l.ConnState(a1, http.StateActive) // serving a request
	read(t, a2)                       // its request's headers arriving
	l.ConnState(b1, http.StateActive) // b1 and b2 between requests,
	l.ConnState(b1, http.StateIdle)   // idle longer than a3
	c1, closed := admit(t, l, "192.0.2.3:1")
	if c1 == nil || closed != a3.(*limitedConn).Conn {
		t.Fatalf("a new client: admitted %v, closed %v; want a3 closed (a holds the most; a1 busy, a2 reading)", c1 != nil, closed)
	}
	// Now a holds 2, b 2, c 1. A new connection of c's closes one of a's
	// or b's, whichever has one idle: b's.
	c2, closed := admit(t, l, "192.0.2.3:2")
	if c2 == nil || (closed != b1.(*limitedConn).Conn && closed != b2.(*limitedConn).Conn) {
		t.Fatalf("c again: admitted %v, closed %v; want one of b's", c2 != nil, closed)
	}
	// a 2, b 1, c 2, all busy: a new one of b's is refused.
	read(t, c1)
	l.ConnState(c2, http.StateActive)
	l.ConnState(b1, http.StateActive)
	l.ConnState(b2, http.StateActive)
	if d, closed := admit(t, l, "192.0.2.2:3"); d != nil || closed != nil {
		t.Fatalf("every connection busy: admitted %v, closed %v; want refused", d != nil, closed)
	}
	// Nor is a connection of a client holding fewer than the new one's.
	l.ConnState(b2, http.StateIdle)
	if d, closed := admit(t, l, "192.0.2.3:9"); d != nil || closed != nil {
		t.Fatalf("c (2) against b's idle one (b holds 1): admitted %v, closed %v; want refused", d != nil, closed)
	}
	if got := testutil.ToFloat64(l.refused.WithLabelValues(reasonTotal)); got != 2 {
		t.Errorf("refused total %v, want 2", got)
	}
	// The client holding the most replaces its own idle connection.
	l.ConnState(c2, http.StateIdle)
	if c3, closed := admit(t, l, "192.0.2.3:3"); c3 == nil || closed != c2.(*limitedConn).Conn {
		t.Errorf("c, holding the most: admitted %v, closed %v; want c2 closed", c3 != nil, closed)
	}
	a1.Close() // as the server does once the read fails: counted once
	a1.Close()
	if e, closed := admit(t, l, "192.0.2.5:1"); e == nil || closed != nil {
		t.Errorf("a closed connection's place: admitted %v, closed %v", e != nil, closed)
	}
	if l.total != 5 {
		t.Errorf("%d counted, want 5", l.total)
	}
}

// A connection whose headers have been arriving for longer than
// HeaderTimeout may be closed like an idle one (the server closes it at
// that deadline anyway; an HTTP/2 connection's frames between streams
// count so too).
func TestConnLimitsHeaderTimeout(t *testing.T) {
	t.Parallel()
	l := LimitConns(nil, ConnLimits{Total: 2, HeaderTimeout: time.Millisecond}, nil)
	a, _ := admit(t, l, "192.0.2.1:1")
	b, _ := admit(t, l, "192.0.2.1:2")
	read(t, a)
	read(t, b)
	if c, closed := admit(t, l, "192.0.2.9:1"); c != nil || closed != nil {
		t.Fatalf("both reading, first seen so: admitted %v, closed %v; want refused", c != nil, closed)
	}
	seen := b.(*limitedConn).state.Load() >> connStateBits
	if !poll.Within(5*time.Second, func() bool { return l.since()-seen > int64(time.Millisecond) }) {
		t.Fatal("the clock did not move")
	}
	if c, closed := admit(t, l, "192.0.2.9:1"); c == nil || closed != a.(*limitedConn).Conn {
		t.Errorf("past the header timeout: admitted %v, closed %v; want a closed", c != nil, closed)
	}
}

// read makes c read a byte, as the server reads a request's first.
func read(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
}

func TestDescriptorReserve(t *testing.T) {
	t.Parallel()
	for limit, want := range map[int]int{256: 128, 512: 256, 1024: 256, 4096: 512, 65536: 8192} {
		if got := DescriptorReserve(limit); got != want {
			t.Errorf("DescriptorReserve(%d) = %d, want %d", limit, got, want)
		}
	}
}
