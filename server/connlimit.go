package server

import (
	"net"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxConnsPerIP is serve's --max-conns-per-ip: the connections one
// client address (an IPv6 /64) may hold open at once.
const DefaultMaxConnsPerIP = 64

// LimitConnsPerIP wraps ln so that one client address holds at most max
// connections at once, idle keep-alive ones included: a connection beyond
// that is closed as soon as it is accepted, and counted in
// certorder_connections_refused_total (registered on reg, if not nil).
// IPv6 addresses count by their /64, as one host usually holds a whole
// /64. Peers in exempt (trusted reverse proxies, which carry many clients)
// are not limited. max <= 0 returns ln unchanged.
func LimitConnsPerIP(ln net.Listener, max int, exempt []netip.Prefix, reg prometheus.Registerer) net.Listener {
	if max <= 0 {
		return ln
	}
	refused := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "certorder_connections_refused_total",
		Help: "Connections closed at once because their client address (IPv6: its /64) held --max-conns-per-ip already.",
	})
	if reg != nil {
		reg.MustRegister(refused)
	}
	return &connLimiter{Listener: ln, max: max, exempt: exempt, refused: refused, open: map[netip.Addr]int{}}
}

type connLimiter struct {
	net.Listener
	max     int
	exempt  []netip.Prefix
	refused prometheus.Counter

	mu   sync.Mutex
	open map[netip.Addr]int // by AddrKey
}

// AddrKey is what the per-address limits count by: the address, or for
// IPv6 its /64.
func AddrKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
		if err != nil || isTrusted(ap.Addr().Unmap(), l.exempt) {
			return c, nil
		}
		key := AddrKey(ap.Addr())
		l.mu.Lock()
		if l.open[key] >= l.max {
			l.mu.Unlock()
			l.refused.Inc()
			c.Close()
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.open[key]--; l.open[key] <= 0 {
				delete(l.open, key)
			}
			l.mu.Unlock()
		}}, nil
	}
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
