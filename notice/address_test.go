package notice_test

import (
	"errors"
	"net/mail"
	"strings"
	"testing"

	"github.com/certorder/certorder/notice"
)

// The address allow-list, as a class: what each entry point refuses (the
// hostile spellings a review tried) and what it stores.
func TestCheckAddress(t *testing.T) {
	t.Parallel()
	label63 := strings.Repeat("d", 63)
	// long is an address of 64 + 1 + 63 + 1 + 63 + 1 + last octets.
	long := func(last int) string {
		return strings.Repeat("l", 64) + "@" + label63 + "." + label63 + "." + strings.Repeat("e", last)
	}
	for in, want := range map[string]string{
		" Ops@Acme.Example ":                   "ops@acme.example",
		"o.p+s_1!#$%&'*/^=`{|}~?-@a.b.example": "o.p+s_1!#$%&'*/^=`{|}~?-@a.b.example",
		"ops@bücher.example":                   "ops@xn--bcher-kva.example",
		"ops@XN--BCHER-KVA.example":            "ops@xn--bcher-kva.example",
		"ops@日本.example":                       "ops@xn--wgv71a.example",
		strings.Repeat("l", 64) + "@x.example": strings.Repeat("l", 64) + "@x.example",
		"a@" + label63 + ".example":            "a@" + label63 + ".example",
		"a@b.c0m":                              "a@b.c0m",
		long(61):                               long(61), // 254 octets in all
	} {
		got, err := notice.CheckAddress(in)
		if err != nil || got != want {
			t.Errorf("CheckAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "ops", "ops@", "@acme.example", "ops@localhost", "ops@acme.example.", "a@b@c.example",
		"ops\u202e@acme.example", "ops@acme\u200b.example", "ops\u200b@acme.example", "ops@acme.example\u2028",
		"ops\r\n@acme.example", "ops@acme.example\r\nBcc: x@evil.example", "o ps@acme.example", "ops@acme.example\x1b[31m",
		"jörg@acme.example", "操作@acme.example",
		"user@[127.0.0.1]", "user@[IPv6:::1]", "a@127.0.0.1", "a@10.0.0.300",
		strings.Repeat("l", 65) + "@x.example", "a@" + label63 + "d.example",
		"a@-b.example", "a@b-.example", "a@b..example", "a@b_c.example",
		"=?utf-8?q?ops?=@acme.example", "=?UTF-8?B?b3Bz?=@acme.example", "a=?b@acme.example",
		"a..b@x.example", ".a@x.example", "a.@x.example", `"a b"@x.example`, `"ops"@x.example`,
		"Ops <ops@acme.example>", "a@b.example, c@d.example",
		long(62), // 255
	} {
		if got, err := notice.CheckAddress(in); !errors.Is(err, notice.ErrAddress) {
			t.Errorf("CheckAddress(%q) = %q, %v; want ErrAddress", in, got, err)
		}
	}
}

// Whatever it is given, CheckAddress refuses it or returns an address of
// printable ASCII within RFC 5321's bounds that a mail parser reads as the
// same bare address, and that it returns unchanged.
func FuzzCheckAddress(f *testing.F) {
	for _, s := range []string{"ops@acme.example", "Ops@Bücher.Example", "a@[127.0.0.1]", "=?x?=@y.example", "a\u202e@b.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := notice.CheckAddress(in)
		if err != nil {
			return
		}
		for i := 0; i < len(out); i++ {
			if out[i] <= ' ' || out[i] > '~' {
				t.Fatalf("CheckAddress(%q) = %q: not printable ASCII", in, out)
			}
		}
		if len(out) > 254 || strings.IndexByte(out, '@') > 64 {
			t.Fatalf("CheckAddress(%q) = %q: too long", in, out)
		}
		if again, err := notice.CheckAddress(out); err != nil || again != out {
			t.Fatalf("CheckAddress(%q) = %q, then %q %v", in, out, again, err)
		}
		if p, err := mail.ParseAddress(out); err != nil || p.Address != out || p.Name != "" {
			t.Fatalf("CheckAddress(%q) = %q, which net/mail reads as %+v %v", in, out, p, err)
		}
	})
}
