package webhook_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// receiver is a real HTTP server on 127.0.0.1 that counts the connections it
// accepts, so that a test can tell "refused before connecting" from
// "connected, then failed".
type receiver struct {
	*httptest.Server
	conns atomic.Int64
}

func startReceiver(t *testing.T, h http.HandlerFunc) *receiver {
	return start(t, h, false)
}

func startTLSReceiver(t *testing.T, h http.HandlerFunc) *receiver {
	return start(t, h, true)
}

func start(t *testing.T, h http.HandlerFunc, useTLS bool) *receiver {
	t.Helper()
	r := &receiver{Server: httptest.NewUnstartedServer(h)}
	r.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}
	if useTLS {
		r.StartTLS()
	} else {
		r.Start()
	}
	t.Cleanup(r.Close)
	return r
}

// port is the receiver's port, to build URLs with other host names.
func (r *receiver) port() string {
	_, p, _ := net.SplitHostPort(r.Listener.Addr().String())
	return p
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
