package deploytarget

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the target as String gives it, or "error: " and a part of the message
	}{
		{"www.example.com", "www.example.com:443"},
		{"www.example.com:8443", "www.example.com:8443"},
		{"WWW.Example.COM.", "WWW.Example.COM.:443"},
		{"_acme.example.com", "_acme.example.com:443"},
		{"localhost:25", "localhost:25"},
		{"192.0.2.7", "192.0.2.7:443"},
		{"192.0.2.7:465", "192.0.2.7:465"},
		{"[2001:db8::1]", "[2001:db8::1]:443"},
		{"[::1]:8443", "[::1]:8443"},
		{"2001:db8::1", "error: an IPv6 address goes in brackets: [2001:db8::1] or [2001:db8::1]:443"},
		{"::1", "error: goes in brackets"},
		{"https://www.example.com/", "error: not a URL"},
		{"www.example.com/path", "error: not a URL"},
		{"user@www.example.com", "error: not a URL"},
		{"www.example.com:", "error: an empty port"},
		{"www.example.com:0", "error: 1 to 65535"},
		{"www.example.com:65536", "error: 1 to 65535"},
		{"www.example.com:https", "error: 1 to 65535"},
		{"[www.example.com]:443", "error: neither a host name nor an IP address"},
		{"[192.0.2.7]:443", "error: only an IPv6 address"},
		{"[fe80::1%eth0]:443", "error: only an IPv6 address (without a zone)"},
		{"", "error: neither"},
		{"exa mple.com", "error: neither"},
		{"-www.example.com", "error: neither"},
		{"www..example.com", "error: neither"},
		{"$(reboot).example.com", "error: neither"},
		{"www.example.com;id", "error: neither"},
		{strings.Repeat("a", 64) + ".example.com", "error: neither"},
		{"[]", "error: neither"},
	} {
		got, err := Parse(tc.in, 443)
		switch msg, bad := strings.CutPrefix(tc.want, "error: "); {
		case bad && (err == nil || !strings.Contains(err.Error(), msg)):
			t.Errorf("Parse(%q) = %v, %v; want an error saying %q", tc.in, got, err, msg)
		case !bad && (err != nil || got.String() != tc.want):
			t.Errorf("Parse(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if got, _ := Parse("mail.example.com", 25); got.Port != 25 || got.Host != "mail.example.com" {
		t.Errorf("the default port: %+v", got)
	}
}
