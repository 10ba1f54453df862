package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/server/web"
	"github.com/certorder/certorder/wire"
)

// takeSlot takes one of the MaxInFlight places (give it back with
// releaseSlot), or says to come back. The places are a counter: a
// buffered channel's send and receive each took its lock (44 ns a
// request on two cores, against 6 ns).
func (s *Server) takeSlot() *wire.Failure {
	if s.maxInFlight == 0 {
		return nil
	}
	for {
		n := s.inFlight.Load()
		if n >= s.maxInFlight {
			s.metrics.limited.WithLabelValues("in_flight").Inc()
			f := wire.Fail(wire.Unavailable)
			f.RetryAfter = time.Second
			return f
		}
		if s.inFlight.CompareAndSwap(n, n+1) {
			return nil
		}
	}
}

// releaseSlot gives back the place takeSlot took.
func (s *Server) releaseSlot() {
	if s.maxInFlight != 0 {
		s.inFlight.Add(-1)
	}
}

// refuse answers 429 for a limit, with the wait in Retry-After.
func (s *Server) refuse(limit string, wait time.Duration) *wire.Failure {
	s.metrics.limited.WithLabelValues(limit).Inc()
	f := wire.Fail(wire.RateLimited)
	f.RetryAfter = wait
	return f
}

// lockedOut refuses an IP, or an IP for an AccessName, that failed
// authentication too often. A name is never locked out as such: another
// address presenting it is not refused.
func (s *Server) lockedOut(ip, name string, now time.Time) *wire.Failure {
	if locked, wait := s.ipFails.locked(ip, now); locked {
		return s.refuse("auth_lockout", wait)
	}
	if s.pairFails == nil {
		return nil
	}
	if locked, wait := s.pairFails.locked(ip+"\x00"+name, now); locked {
		return s.refuse("auth_lockout", wait)
	}
	return nil
}

// authFailed counts a failed authentication against the IP, and the IP
// with the name.
func (s *Server) authFailed(ip, name string, now time.Time) {
	s.metrics.authFailures.Inc()
	s.ipFails.fail(ip, now)
	if s.pairFails != nil {
		s.pairFails.fail(ip+"\x00"+name, now)
	}
}

// signIn checks the web page's sign-in with the API's refusals and
// failed-authentication lockouts.
func (s *Server) signIn(r *http.Request, name, key string) (certorder.Credential, error) {
	// The page's own limits (admitWeb) have counted the attempt: the
	// API's per-IP budget is not spent on it.
	ip, now := limitKey(clientIP(r, s.cfg.Limits.TrustedProxies)), s.cfg.Now()
	if f := s.lockedOut(ip, name, now); f != nil {
		return certorder.Credential{}, &web.ThrottledError{Wait: f.RetryAfter}
	}
	if name == "" || key == "" {
		return certorder.Credential{}, web.ErrRefused
	}
	cred, _, f := s.authenticate(r.Context(), name, key, 0)
	switch {
	case f == nil:
		return cred, nil
	case f.Code == wire.CredentialsFailed:
		s.authFailed(ip, name, now)
		return cred, web.ErrRefused
	case f.Code == wire.Unavailable:
		return cred, fmt.Errorf("sign-in: %w", certorder.ErrUnavailable)
	}
	return cred, fmt.Errorf("sign-in: error %d", f.Code)
}

// secure says whether the request came over TLS, directly or through a
// trusted proxy that says so.
func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || fromTrustedProxy(r, s.cfg.Limits.TrustedProxies) &&
		strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}
