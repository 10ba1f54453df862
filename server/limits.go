package server

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits are the abuse limits. A zero field turns its limit off.
type Limits struct {
	MemberRate  float64 // requests per second per member, after authentication
	MemberBurst int
	IPRate      float64 // requests per second per client IP, before anything else
	IPBurst     int

	// After AuthFailures failed authentications within AuthFailWindow from
	// one IP naming one AccessName, or AuthFailuresPerIP from one IP
	// whatever the names, further attempts from that IP (for that name, or
	// at all) are refused for AuthLockout. Failures are never counted per
	// name alone: anyone could then lock a member out, and keys carry 192
	// random bits, so guessing is hopeless anyway (docs/OPERATIONS.md).
	AuthFailures      int
	AuthFailuresPerIP int
	AuthFailWindow    time.Duration
	AuthLockout       time.Duration

	// MaxInFlight bounds the requests being answered at once, counted only
	// once their whole body has arrived; beyond it a fast 503. MaxPerIP
	// bounds what one client IP may hold open at once, bodies still
	// arriving included; BodyTimeout bounds how long a body may take.
	MaxInFlight int
	MaxPerIP    int
	BodyTimeout time.Duration

	// WebRate and WebBurst bound each client address's requests to the
	// member web page, apart from the API's (weblimits.go): every request
	// but the static files, and its forms' POSTs a fifth as fast.
	WebRate  float64
	WebBurst int

	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
}

// DefaultLimits are safe on the internet and far above what ACME hooks and
// cron jobs do (a few requests a day per order).
var DefaultLimits = Limits{
	MemberRate: 10, MemberBurst: 50,
	IPRate: 20, IPBurst: 100,
	AuthFailures: 10, AuthFailuresPerIP: 50, AuthFailWindow: 10 * time.Minute, AuthLockout: 15 * time.Minute,
	MaxInFlight: 512, MaxPerIP: 32, BodyTimeout: 5 * time.Second,
	WebRate: 10, WebBurst: 100,
}

// buckets is a token bucket per key (member or IP).
type buckets struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex
	m     map[string]*bucket
	swept time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newBuckets(perSecond float64, burst int) *buckets {
	if perSecond <= 0 {
		return nil
	}
	return &buckets{limit: rate.Limit(perSecond), burst: max(burst, 1), m: map[string]*bucket{}}
}

// take spends a token of key at now. When none is left it says how long
// until one is.
func (b *buckets) take(key string, now time.Time) (bool, time.Duration) {
	if b == nil {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep(now)
	e := b.m[key]
	if e == nil {
		e = &bucket{lim: rate.NewLimiter(b.limit, b.burst)}
		b.m[key] = e
	}
	e.seen = now
	r := e.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// sweep forgets, once a minute, the buckets idle long enough to be full
// again: a new bucket would be the same. It bounds memory to active keys.
func (b *buckets) sweep(now time.Time) {
	if now.Sub(b.swept) < time.Minute {
		return
	}
	b.swept = now
	full := time.Duration(float64(b.burst) / float64(b.limit) * float64(time.Second))
	for k, e := range b.m {
		if now.Sub(e.seen) > full {
			delete(b.m, k)
		}
	}
}

// failures counts failed authentications per key and locks a key out.
type failures struct {
	max             int
	window, lockout time.Duration
	mu              sync.Mutex
	m               map[string]*failCount
	swept           time.Time
}

type failCount struct {
	n           int
	since       time.Time // start of the current window
	lockedUntil time.Time
}

func newFailures(limit int, l Limits) *failures {
	if limit <= 0 || l.AuthFailWindow <= 0 || l.AuthLockout <= 0 {
		return nil
	}
	return &failures{max: limit, window: l.AuthFailWindow, lockout: l.AuthLockout, m: map[string]*failCount{}}
}

// holds counts what each client IP holds open at once.
type holds struct {
	max int
	mu  sync.Mutex
	m   map[string]int
}

func newHolds(max int) *holds {
	if max <= 0 {
		return nil
	}
	return &holds{max: max, m: map[string]int{}}
}

// take holds one more for ip, unless it holds max already; release gives it back.
func (h *holds) take(ip string) bool {
	if h == nil {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m[ip] >= h.max {
		return false
	}
	h.m[ip]++
	return true
}

// release gives back what take held for ip.
func (h *holds) release(ip string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m[ip]--; h.m[ip] <= 0 {
		delete(h.m, ip)
	}
}

// count is what all addresses hold open now, for the
// certorder_requests_open gauge: a scrape sums it, where a gauge kept by
// take and release would cost two more atomic writes a request.
func (h *holds) count() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, v := range h.m {
		n += v
	}
	return float64(n)
}

// locked says whether key is locked out at now, and for how long still.
func (f *failures) locked(key string, now time.Time) (bool, time.Duration) {
	if f == nil {
		return false, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.m[key]; c != nil && now.Before(c.lockedUntil) {
		return true, c.lockedUntil.Sub(now)
	}
	return false, 0
}

// fail counts a failed authentication for key at now.
func (f *failures) fail(key string, now time.Time) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep(now)
	c := f.m[key]
	if c == nil || now.Sub(c.since) > f.window {
		c = &failCount{since: now}
		f.m[key] = c
	}
	c.n++
	if c.n >= f.max {
		c.lockedUntil = now.Add(f.lockout)
		c.n, c.since = 0, now
	}
}

func (f *failures) sweep(now time.Time) {
	if now.Sub(f.swept) < time.Minute {
		return
	}
	f.swept = now
	for k, c := range f.m {
		if now.Sub(c.since) > f.window && !now.Before(c.lockedUntil) {
			delete(f.m, k)
		}
	}
}

// retryAfter is the Retry-After header value for a wait: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(int64(math.Max(1, math.Ceil(d.Seconds()))), 10)
}

// ClientIP is the request's client address by the service's rules: the
// peer, or, when the peer is one of the trusted proxies, the nearest
// address in X-Forwarded-For that is not one.
func ClientIP(r *http.Request, trusted []netip.Prefix) string { return clientIP(r, trusted) }

// clientIP is the request's client address: the peer, or, when the peer is
// a trusted proxy, the nearest address in X-Forwarded-For that is not one.
func clientIP(r *http.Request, trusted []netip.Prefix) string {
	peer, host, ok := peerHost(r)
	if !ok {
		return r.RemoteAddr
	}
	if !isTrusted(peer, trusted) {
		if peer.Is4() && host != "" && !strings.Contains(host, ":") {
			return host // a dotted quad reads back as written (ParseAddr refuses leading zeros): no new string
		}
		return peer.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a forged or broken entry: trust nothing beyond it
		}
		a = a.Unmap()
		if !isTrusted(a, trusted) {
			return a.String()
		}
		peer = a
	}
	return peer.String()
}

// limitKey is what the per-address limits (rate, requests open, failed
// authentications) count a client address by: an IPv4 address as it is,
// an IPv6 address by its /64, since one host or customer is usually given
// a whole /64 and could otherwise take a fresh address for every request.
func limitKey(ip string) string {
	if !strings.Contains(ip, ":") {
		return ip // IPv4 (the common case): no parsing
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ip
	}
	return netip.PrefixFrom(AddrKey(a), 64).String()
}

// peerAddr is the address of the connection's other end.
func peerAddr(r *http.Request) (netip.Addr, bool) {
	a, _, ok := peerHost(r)
	return a, ok
}

// peerHost is peerAddr, and the host as RemoteAddr writes it ("" when
// RemoteAddr has no port).
func peerHost(r *http.Request) (netip.Addr, string, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	var a netip.Addr
	if err != nil {
		host = ""
		a, err = netip.ParseAddr(r.RemoteAddr)
	} else {
		a, err = netip.ParseAddr(host)
	}
	return a.Unmap(), host, err == nil
}

// fromTrustedProxy reports whether the request came through a trusted proxy.
func fromTrustedProxy(r *http.Request, trusted []netip.Prefix) bool {
	peer, ok := peerAddr(r)
	return ok && isTrusted(peer, trusted)
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
