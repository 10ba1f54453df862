package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeConn is a connection from remote, never read or written: the limits
// look at the address alone (the process test TestConnBudget dials real
// ones on loopback).
type fakeConn struct {
	net.Conn
	remote net.Addr
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c *fakeConn) Close() error         { c.closed = true; return nil }

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

// At Total, the connection idle longest (a keep-alive between requests, or
// one that sent nothing yet) is closed to admit a new one, a busy one
// never; with every connection busy, the new one is refused. A closed
// connection frees its place.
func TestConnLimitsTotal(t *testing.T) {
	t.Parallel()
	l := LimitConns(nil, ConnLimits{PerIP: 64, Total: 3}, nil)
	a, _ := admit(t, l, "192.0.2.1:1")
	b, _ := admit(t, l, "192.0.2.2:1")
	c, _ := admit(t, l, "192.0.2.3:1")
	l.ConnState(a, http.StateActive) // serving a request
	l.ConnState(c, http.StateActive)
	l.ConnState(c, http.StateIdle) // between requests since now: b is idle longer
	d, closed := admit(t, l, "192.0.2.4:1")
	if d == nil || closed != b.(*limitedConn).Conn {
		t.Fatalf("at the total: admitted %v, closed %v; want b closed", d != nil, closed)
	}
	b.Close() // as the server does once the read fails: counted once
	e, closed := admit(t, l, "192.0.2.5:1")
	if e == nil || closed != c.(*limitedConn).Conn {
		t.Fatalf("then: admitted %v, closed %v; want c closed", e != nil, closed)
	}
	l.ConnState(d, http.StateActive)
	l.ConnState(e, http.StateActive)
	if f, _ := admit(t, l, "192.0.2.6:1"); f != nil {
		t.Fatal("admitted with every connection busy")
	}
	if got := testutil.ToFloat64(l.refused.WithLabelValues(reasonTotal)); got != 1 {
		t.Errorf("refused total %v, want 1", got)
	}
	a.Close()
	if g, closed := admit(t, l, "192.0.2.7:1"); g == nil || closed != nil {
		t.Errorf("a closed connection's place: admitted %v, closed %v", g != nil, closed)
	}
	if l.total != 3 {
		t.Errorf("%d counted, want 3", l.total)
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
