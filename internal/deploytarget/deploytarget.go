// Package deploytarget is the rule for what certorder deployed connects
// to, HOST[:PORT]: the command reads its arguments with it, and the order
// page names a host by it in the command it shows.
package deploytarget

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Target is a server to read a certificate from.
type Target struct {
	Host string // a host name or an IP address, without brackets
	Port int
}

// String is the target as HOST:PORT, an IPv6 address in brackets.
func (t Target) String() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

// Parse reads HOST[:PORT]: an IPv6 address in brackets, the port
// defaultPort when none is given. A URL, a bare IPv6 address, a port that
// is not 1 to 65535 and a host that is neither a host name nor an IP
// address are refused, with what to write instead.
func Parse(s string, defaultPort int) (Target, error) {
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@") {
		return Target{}, fmt.Errorf("%q is not HOST[:PORT] (give the server's name and port, not a URL)", s)
	}
	host, port := s, ""
	switch h, p, err := net.SplitHostPort(s); {
	case err == nil:
		host, port = h, p
		if port == "" {
			return Target{}, fmt.Errorf("%q has an empty port", s)
		}
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		host = s[1 : len(s)-1]
	case strings.Count(s, ":") > 1:
		return Target{}, fmt.Errorf("%q: an IPv6 address goes in brackets: [%s] or [%s]:443", s, s, s)
	case strings.Contains(s, ":"):
		return Target{}, fmt.Errorf("%q is not HOST[:PORT]", s)
	}
	t := Target{Host: host, Port: defaultPort}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
		}
		t.Port = n
	}
	bracketed := strings.HasPrefix(s, "[")
	if a, err := netip.ParseAddr(host); err == nil {
		if bracketed != a.Is6() || a.Zone() != "" {
			return Target{}, fmt.Errorf("%q: only an IPv6 address (without a zone) goes in brackets", s)
		}
		return t, nil
	}
	if bracketed || !HostName(host) {
		return Target{}, fmt.Errorf("%q: %q is neither a host name nor an IP address", s, host)
	}
	return t, nil
}

// HostName reports whether s is a DNS host name: letters, digits, hyphens
// and underscores in dot-separated labels of at most 63 bytes, neither
// starting nor ending with a hyphen, 253 bytes at most, an optional final
// dot. Nothing else passes, so that such a name is safe in a shell command.
func HostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}
