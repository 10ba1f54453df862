package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// DefaultTimeout bounds one delivery attempt (connect, send, answer) when
// Options.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// ErrBlocked is matched (errors.Is) by every refusal of the address rule:
// a URL whose host is a private, loopback, link-local, multicast or other
// non-public address, and a connection to such an address after DNS.
var ErrBlocked = errors.New("webhook: destination address not allowed")

// ErrInvalidURL is matched by CheckURL's (and the client's) refusals of a
// URL's form: not absolute, not https, user:password@, no host, a bad port.
var ErrInvalidURL = errors.New("webhook: invalid endpoint URL")

// Options configure NewHTTPClient.
type Options struct {
	// AllowPrivate lets deliveries reach every address (loopback, private,
	// link-local, ...) and use plain http: for intranets and tests.
	AllowPrivate bool

	// Timeout bounds a whole attempt, the answer's body included; zero
	// means DefaultTimeout.
	Timeout time.Duration

	// TLSConfig, when set, is used (cloned) for https, e.g. to trust a
	// private CA. Nil means the system's roots.
	TLSConfig *tls.Config

	// LookupNetIP, when set, resolves host names instead of the dialer's
	// own resolver; it has the shape of (*net.Resolver).LookupNetIP.
	// Tests use it to play DNS rebinding. Every address it returns is
	// still checked when dialled.
	LookupNetIP func(ctx context.Context, network, host string) ([]netip.Addr, error)

	// Control, when set, runs for every connection after the address rule
	// has accepted it, before connecting; an error stops the dial. Tests use
	// it to make sure that an accepted public address is never dialled.
	Control func(network, address string, c syscall.RawConn) error
}

// guardian refuses every address outside public unicast: the IANA
// special-purpose registries (RFC 1918, loopback, link-local, CGNAT
// 100.64/10, multicast, documentation, ...) and, for IPv6, everything
// outside 2000::/3 (so fc00::/7, fe80::/10, ::1, ::ffff:0:0/96 mapped
// addresses and NAT64). Any port is allowed.
var guardian = ssrf.New(ssrf.WithAnyPort())

// checkAddr applies the address rule. A mapped ::ffff:a.b.c.d is judged as
// a.b.c.d, the address it reaches; an address with a zone is always refused.
func checkAddr(addr netip.Addr) error {
	if err := guardian.SafeAddr(addr.Unmap()); err != nil {
		return fmt.Errorf("%w: %w", ErrBlocked, err)
	}
	return nil
}

// NewHTTPClient returns the client deliveries go through. Unless
// AllowPrivate, it refuses non-https URLs and checks the IP address of
// every connection it opens, after DNS resolution, so that a name that
// later resolves to an internal address (DNS rebinding) is refused too.
// It follows no redirect, takes no proxy from the environment (a proxy
// would connect on our behalf, past the check) and bounds each attempt by
// the timeout. It is safe for concurrent use; share one.
func NewHTTPClient(opts Options) *http.Client {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, c syscall.RawConn) error {
			if !opts.AllowPrivate {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("%w: cannot read dialled address %q: %w", ErrBlocked, address, err)
				}
				if err := checkAddr(ap.Addr()); err != nil {
					return err
				}
			}
			if opts.Control != nil {
				return opts.Control(network, address, c)
			}
			return nil
		},
	}
	dial := dialer.DialContext
	if opts.LookupNetIP != nil {
		dial = lookupDialer(dialer, opts.LookupNetIP)
	}
	var tlsConfig *tls.Config
	if opts.TLSConfig != nil {
		tlsConfig = opts.TLSConfig.Clone()
	}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dial,
		TLSClientConfig:        tlsConfig,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    timeout,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		// The answer is only glanced at (its first bytes kept for the member):
		// leave it as the receiver sent it.
		DisableCompression: true,
	}
	return &http.Client{
		Transport: &guardTransport{next: transport, allowPrivate: opts.AllowPrivate},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: timeout,
	}
}

// lookupDialer resolves names with lookup and dials the addresses in turn;
// each dial still passes the dialer's Control.
func lookupDialer(d *net.Dialer, lookup func(context.Context, string, string) ([]netip.Addr, error)) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, address)
		}
		addrs, err := lookup(ctx, "ip", host)
		if err != nil {
			timeout := errors.Is(err, context.DeadlineExceeded)
			return nil, &net.DNSError{UnwrapErr: err, Err: err.Error(), Name: host, IsTimeout: timeout, IsNotFound: !timeout}
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
		var first error
		for _, a := range addrs {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			if first == nil {
				first = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, first
	}
}

// guardTransport refuses, before any connection, a request whose URL breaks
// the form rule (https unless allowPrivate, no userinfo, a host).
type guardTransport struct {
	next         *http.Transport
	allowPrivate bool
}

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkURLForm(req.URL, g.allowPrivate); err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper must close the body, even on error
		}
		return nil, err
	}
	return g.next.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport.
func (g *guardTransport) CloseIdleConnections() { g.next.CloseIdleConnections() }

// maxURLLen bounds an endpoint URL; a longer one is almost surely a mistake.
const maxURLLen = 2048

// CheckURL says whether raw may be a webhook endpoint's URL: absolute, https
// (or http when allowPrivate), a host, no user:password@, a port if any
// between 1 and 65535. Unless allowPrivate, a host that is an IP address
// must be public and a localhost name is refused (both match ErrBlocked);
// other names are not resolved here: the client checks the address of
// every connection, which also covers names that change what they resolve
// to. Errors name the host, never the whole URL (its query may hold a token).
func CheckURL(raw string, allowPrivate bool) error {
	if len(raw) > maxURLLen {
		return fmt.Errorf("%w: longer than %d characters", ErrInvalidURL, maxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: it does not parse", ErrInvalidURL)
	}
	if err := checkURLForm(u, allowPrivate); err != nil {
		return err
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if allowPrivate {
			return nil
		}
		return checkAddr(addr)
	}
	if looksNumeric(host) {
		// 127.1, 0x7f.0.0.1, 2130706433: not a name, and some resolvers read them as addresses.
		return fmt.Errorf("%w: host %q is neither an IP address nor a DNS name", ErrInvalidURL, host)
	}
	lower := strings.ToLower(strings.TrimSuffix(host, "."))
	if !allowPrivate && (lower == "localhost" || strings.HasSuffix(lower, ".localhost")) {
		return fmt.Errorf("%w: host %q is loopback (RFC 6761)", ErrBlocked, host)
	}
	return nil
}

// checkURLForm is the part of CheckURL that needs no address: the client
// applies it to every request.
func checkURLForm(u *url.URL, allowPrivate bool) error {
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowPrivate:
	case u.Scheme == "http":
		return fmt.Errorf("%w: it must be https", ErrInvalidURL)
	case u.Scheme == "":
		return fmt.Errorf("%w: it is not absolute (no scheme)", ErrInvalidURL)
	default:
		return fmt.Errorf("%w: scheme %q is not http(s)", ErrInvalidURL, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w: it has no host", ErrInvalidURL)
	}
	if u.User != nil {
		return fmt.Errorf("%w: it carries a user name or password (host %q)", ErrInvalidURL, u.Hostname())
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port %q of host %q is not 1 to 65535", ErrInvalidURL, p, u.Hostname())
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("%w: host %q has an empty port", ErrInvalidURL, u.Hostname())
	}
	return nil
}

// looksNumeric reports a host whose last label is all digits or hex with
// 0x: no top-level domain looks like that, but inet_aton-style addresses do.
func looksNumeric(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if l := strings.ToLower(last); strings.HasPrefix(l, "0x") {
		return true
	}
	for _, r := range last {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
