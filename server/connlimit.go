package server

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxConnsPerIP is serve's --max-conns-per-ip: the connections one
// client address (an IPv6 /64) may hold open at once.
const DefaultMaxConnsPerIP = 64

// PrefixConnsFactor is how many times --max-conns-per-ip an IPv6 /56 may
// hold in all: a /56 is what a provider gives one customer site, 256 /64s,
// and would otherwise hold 256 times the cap.
const PrefixConnsFactor = 4

// ConnLimits bound the connections the API listener holds open, idle
// keep-alive ones included.
type ConnLimits struct {
	// PerIP is the most one client address holds (IPv6: its /64; its /56
	// holds PrefixConnsFactor times as many); 0: no per-address cap.
	PerIP int
	// Total is the most all clients hold, below the process's descriptor
	// limit (DescriptorBudget); 0: no total.
	Total int
	// Exempt are peers not capped per address (trusted reverse proxies,
	// which carry many clients); they count in Total.
	Exempt []netip.Prefix
}

// ConnLimiter is a listener that holds its connections within ConnLimits.
// A connection over a per-address cap is closed as soon as it is accepted,
// before anything is read. At Total, the connection idle the longest (a
// keep-alive between requests, or one that has sent nothing yet) is closed
// to admit the new one; only when every connection is serving a request
// is the new one closed instead. So accept never runs out of descriptors,
// and idle connections from many addresses cannot lock a new client out.
// Hand ConnState to the http.Server (it tells idle from busy).
type ConnLimiter struct {
	net.Listener
	lim        ConnLimits
	refused    *prometheus.CounterVec
	idleClosed prometheus.Counter

	mu     sync.Mutex
	total  int
	byAddr map[netip.Addr]int // by AddrKey
	byWide map[netip.Addr]int // IPv6 by /56
	idle   list.List          // of *limitedConn not serving a request, the longest idle first
}

// LimitConns wraps ln in a ConnLimiter; its metrics are registered on reg,
// if not nil: certorder_connections_refused_total by reason (per_address,
// per_prefix, total) and certorder_connections_idle_closed_total.
func LimitConns(ln net.Listener, lim ConnLimits, reg prometheus.Registerer) *ConnLimiter {
	l := &ConnLimiter{Listener: ln, lim: lim,
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "certorder_connections_refused_total",
			Help: "Connections closed as soon as accepted, by reason: per_address (the address, IPv6 its /64, held --max-conns-per-ip), " +
				"per_prefix (its IPv6 /56 held 4 times that), total (--max-conns reached, every connection busy).",
		}, []string{"reason"}),
		idleClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "certorder_connections_idle_closed_total",
			Help: "Idle connections closed, the longest idle first, to admit a new one at --max-conns.",
		}),
		byAddr: map[netip.Addr]int{}, byWide: map[netip.Addr]int{}}
	for _, reason := range []string{reasonPerAddress, reasonPerPrefix, reasonTotal} {
		l.refused.WithLabelValues(reason) // every reason shows, at 0
	}
	if reg != nil {
		reg.MustRegister(l.refused, l.idleClosed)
	}
	return l
}

// The reasons of certorder_connections_refused_total.
const (
	reasonPerAddress = "per_address"
	reasonPerPrefix  = "per_prefix"
	reasonTotal      = "total"
)

// AddrKey is what the per-address limits count by: the address, or for
// IPv6 its /64.
func AddrKey(a netip.Addr) netip.Addr {
	return prefixKey(a, 64)
}

// prefixKey is a's prefix of bits if a is IPv6, else a.
func prefixKey(a netip.Addr, bits int) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(bits)
		return p.Addr()
	}
	return a
}

// Accept returns the next connection within the limits.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc, victim, reason := l.admit(c)
		if victim != nil {
			victim.Conn.Close() // its counts were released in admit
			l.idleClosed.Inc()
		}
		if reason != "" {
			l.refused.WithLabelValues(reason).Inc()
			c.Close()
			continue
		}
		return lc, nil
	}
}

// admit counts c in, or says why not; victim is an idle connection to
// close for it.
func (l *ConnLimiter) admit(c net.Conn) (lc *limitedConn, victim *limitedConn, reason string) {
	lc = &limitedConn{Conn: c, l: l}
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil && l.lim.PerIP > 0 && !isTrusted(ap.Addr().Unmap(), l.lim.Exempt) {
		lc.addr, lc.capped = AddrKey(ap.Addr()), true
		if lc.addr.Is6() {
			lc.wide = prefixKey(ap.Addr(), 56)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case lc.capped && l.byAddr[lc.addr] >= l.lim.PerIP:
		return nil, nil, reasonPerAddress
	case lc.capped && lc.wide.IsValid() && l.byWide[lc.wide] >= PrefixConnsFactor*l.lim.PerIP:
		return nil, nil, reasonPerPrefix
	}
	if l.lim.Total > 0 && l.total >= l.lim.Total {
		front := l.idle.Front()
		if front == nil {
			return nil, nil, reasonTotal
		}
		victim = front.Value.(*limitedConn)
		l.release(victim)
	}
	l.total++
	if lc.capped {
		l.byAddr[lc.addr]++
		if lc.wide.IsValid() {
			l.byWide[lc.wide]++
		}
	}
	lc.elem = l.idle.PushBack(lc) // new: idle until its first request
	return lc, victim, ""
}

// release takes c out of the counts, once. Called with l.mu held.
func (l *ConnLimiter) release(c *limitedConn) {
	if c.released {
		return
	}
	c.released = true
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
	}
	l.total--
	if !c.capped {
		return
	}
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
	if c.wide.IsValid() {
		if l.byWide[c.wide]--; l.byWide[c.wide] <= 0 {
			delete(l.byWide, c.wide)
		}
	}
}

// ConnState is for http.Server.ConnState: it keeps the list of idle
// connections, the longest idle first.
func (l *ConnLimiter) ConnState(c net.Conn, s http.ConnState) {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.released {
		return
	}
	if lc.elem != nil {
		l.idle.Remove(lc.elem)
		lc.elem = nil
	}
	if s == http.StateIdle || s == http.StateNew {
		lc.elem = l.idle.PushBack(lc)
	}
}

type limitedConn struct {
	net.Conn
	l      *ConnLimiter
	capped bool       // counted per address
	addr   netip.Addr // AddrKey
	wide   netip.Addr // IPv6: the /56; else invalid

	// Guarded by l.mu.
	elem     *list.Element // in l.idle while idle
	released bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.release(c)
	c.l.mu.Unlock()
	return err
}
