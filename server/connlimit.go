package server

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

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
	// HeaderTimeout is how long a connection whose request has begun to
	// arrive, headers not yet whole, is never closed to admit another:
	// the http.Server's ReadHeaderTimeout (else its ReadTimeout), after
	// which the server closes it anyway; 0: as long as it takes.
	HeaderTimeout time.Duration
}

// ConnLimiter is a listener that holds its connections within ConnLimits.
// A connection over a per-address cap is closed as soon as it is accepted,
// before anything is read. At Total, a new connection is admitted by
// closing an idle connection (a keep-alive between requests, or one that
// has sent nothing yet) of the client holding the most connections (IPv4:
// the address; IPv6: its /56), if that client holds more than the new
// connection's own (or is its own); a connection whose request is
// arriving (within HeaderTimeout) or being served is never closed. With
// no such idle connection the new one is closed instead. So accept never
// runs out of descriptors, and clients churning connections from a few
// addresses close their own, not the connections of slow, keep-alive or
// new clients elsewhere. Hand ConnState to the http.Server (it tells a
// connection serving a request from one between requests).
//
// A request costs the limiter a few atomic operations on its connection
// (its first read marks it reading, StateActive serving, StateIdle idle);
// the lock is taken only to admit and to release a connection.
type ConnLimiter struct {
	net.Listener
	lim        ConnLimits
	refused    *prometheus.CounterVec
	idleClosed prometheus.Counter
	epoch      time.Time // connections' times are nanoseconds since

	mu     sync.Mutex
	total  int
	byAddr map[netip.Addr]int // capped peers by AddrKey
	byWide map[netip.Addr]int // capped IPv6 peers by /56
	fair   fairGroups         // every connection, by FairKey
}

// LimitConns wraps ln in a ConnLimiter; its metrics are registered on reg,
// if not nil: certorder_connections_refused_total by reason (per_address,
// per_prefix, total) and certorder_connections_idle_closed_total.
func LimitConns(ln net.Listener, lim ConnLimits, reg prometheus.Registerer) *ConnLimiter {
	l := &ConnLimiter{Listener: ln, lim: lim, epoch: time.Now(),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "certorder_connections_refused_total",
			Help: "Connections closed as soon as accepted, by reason: per_address (the address, IPv6 its /64, held --max-conns-per-ip), " +
				"per_prefix (its IPv6 /56 held 4 times that), total (--max-conns reached, and no client holding more connections had one idle).",
		}, []string{"reason"}),
		idleClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "certorder_connections_idle_closed_total",
			Help: "Idle connections closed to admit a new one at --max-conns, of the client (IPv4 address, IPv6 /56) holding the most.",
		}),
		byAddr: map[netip.Addr]int{}, byWide: map[netip.Addr]int{}, fair: fairGroups{byKey: map[netip.Addr]*connGroup{}}}
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

// FairKey is what admission at the total counts a client by: the IPv4
// address, or for IPv6 its /56, what a provider gives one customer site
// (by /64, a site could spread its connections over 256 keys and never
// hold the most).
func FairKey(a netip.Addr) netip.Addr {
	return prefixKey(a, 56)
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
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err == nil {
		lc.fairKey = FairKey(ap.Addr())
	}
	if err == nil && l.lim.PerIP > 0 && !isTrusted(ap.Addr().Unmap(), l.lim.Exempt) {
		lc.addr, lc.capped = AddrKey(ap.Addr()), true
		if lc.addr.Is6() {
			lc.wide = lc.fairKey
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
		if victim = l.fair.victim(lc.fairKey, l.evictable); victim == nil {
			return nil, nil, reasonTotal
		}
		l.release(victim)
	}
	l.total++
	if lc.capped {
		l.byAddr[lc.addr]++
		if lc.wide.IsValid() {
			l.byWide[lc.wide]++
		}
	}
	l.fair.add(lc)
	return lc, victim, ""
}

// evictable marks c to be closed if it is idle, or has been reading a
// request's headers for longer than HeaderTimeout; false if it is busy.
// The time a connection began reading is the time admission first saw it
// reading (the request path reads no clock for it), so it may be
// protected up to HeaderTimeout past its real deadline, which for
// HTTP/1.1 the server enforces itself.
func (l *ConnLimiter) evictable(c *limitedConn) bool {
	switch st := c.state.Load(); {
	case st == connIdle:
		return c.state.CompareAndSwap(connIdle, connEvicted)
	case st&connStateMask == connReading && l.lim.HeaderTimeout > 0:
		now := l.since()
		if st == connReading { // seen reading for the first time: from now on
			c.state.CompareAndSwap(connReading, connReading|now<<connStateBits)
			return false
		}
		if now-st>>connStateBits > int64(l.lim.HeaderTimeout) {
			return c.state.CompareAndSwap(st, connEvicted)
		}
	}
	return false
}

// since is the time now, in nanoseconds since l.epoch (monotonic), at
// least 1.
func (l *ConnLimiter) since() int64 { return max(1, int64(time.Since(l.epoch))) }

// release takes c out of the counts, once. Called with l.mu held.
func (l *ConnLimiter) release(c *limitedConn) {
	if c.released {
		return
	}
	c.released = true
	l.total--
	l.fair.remove(c)
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

// ConnState is for http.Server.ConnState: a connection is busy from its
// request's first byte (limitedConn.Read) until the server is done with it
// (StateIdle), and idle again then; reading for longer than HeaderTimeout
// counts as idle (an HTTP/2 connection's frames between streams, or a
// client past the deadline the server closes it at anyway). Nothing here
// takes the lock.
func (l *ConnLimiter) ConnState(c net.Conn, s http.ConnState) {
	if s != http.StateActive && s != http.StateIdle {
		return
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		tc, tls := c.(interface{ NetConn() net.Conn })
		if !tls {
			return
		}
		if lc, ok = tc.NetConn().(*limitedConn); !ok {
			return
		}
	}
	// A connection chosen to be closed was released already: what it is
	// marked now no longer matters.
	if s == http.StateActive { // the headers are whole: busy, however long it takes
		lc.state.Store(connActive)
	} else {
		lc.state.Store(connIdle)
	}
}

// The states of a connection (limitedConn.state): the low connStateBits;
// a connection reading has above them the time admission first saw it so
// (ConnLimiter.since), or 0 until then.
const (
	connIdle    = iota // admitted, or between requests: may be closed to admit another
	connReading        // a request's bytes have begun to arrive
	connActive         // its request is whole and being served
	connEvicted        // chosen to be closed

	connStateBits = 2
	connStateMask = 1<<connStateBits - 1
)

type limitedConn struct {
	net.Conn
	l       *ConnLimiter
	capped  bool       // counted per address
	addr    netip.Addr // AddrKey
	wide    netip.Addr // IPv6: the /56; else invalid
	fairKey netip.Addr // FairKey; invalid for an address not parsed

	state atomic.Int64 // connIdle...

	// Guarded by l.mu.
	group      *connGroup
	prev, next *limitedConn // in group's list, oldest first
	released   bool
}

// Read marks the connection busy when the first bytes of a request
// arrive: one load of its state on every read after that.
func (c *limitedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.state.Load() == connIdle {
		c.state.CompareAndSwap(connIdle, connReading)
	}
	return n, err
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.release(c)
	c.l.mu.Unlock()
	return err
}
