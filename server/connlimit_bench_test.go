package server

import (
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
)

// BenchmarkConnBookkeeping is what the connection limits cost a request on
// a keep-alive connection (its first byte read, then the server's
// StateActive and StateIdle), on 32 connections of one client at once, as
// loadbench's wrk runs them:
//
//	go test -run '^$' -bench ConnBookkeeping -benchmem -cpu 1,2 ./server
func BenchmarkConnBookkeeping(b *testing.B) {
	l := LimitConns(nil, ConnLimits{PerIP: DefaultMaxConnsPerIP, Total: 57344}, nil)
	var port atomic.Uint32
	b.SetParallelism(16) // 32 connections on 2 cores
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		raw := &benchConn{remote: net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(40000+port.Add(1))))}
		lc, _, reason := l.admit(raw)
		if reason != "" {
			b.Error(reason)
			return
		}
		l.ConnState(lc, http.StateNew)
		buf := make([]byte, 512)
		for pb.Next() {
			lc.Read(buf)
			l.ConnState(lc, http.StateActive)
			l.ConnState(lc, http.StateIdle)
		}
	})
}

// benchConn is a connection whose reads return a request's bytes at once.
type benchConn struct {
	net.Conn
	remote net.Addr
}

func (c *benchConn) RemoteAddr() net.Addr       { return c.remote }
func (c *benchConn) Read(b []byte) (int, error) { return len(b), nil }
func (c *benchConn) Close() error               { return nil }
