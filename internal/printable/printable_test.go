package printable

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 300)
	for in, want := range map[string]string{
		"":                        "",
		"issued":                  "issued",
		"needs approval ✓ 発行済み":   "needs approval ✓ 発行済み",
		"a\"b\\c":                 `a"b\c`, // graphic: as it is
		"pending\x1b]0;PWNED\x07": `"pending\x1b]0;PWNED\a"`,
		"\x1b[2J":                 `"\x1b[2J"`,
		"tab\there":               `"tab\there"`,
		"two\nlines":              `"two\nlines"`,
		"\u202eevil":              `"\u202eevil"`,
		"\u200bissued":            `"\u200bissued"`,
		"\ufeff=1+1":              `"\ufeff=1+1"`,
		"bad\xffutf8":             `"bad\xffutf8"`,
		"say \"x\"\x07":           `"say \"x\"\a"`,
		long:                      `"` + long[:251] + `"...`,
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// Whatever the input, the result is at most Max bytes of graphic
// characters, and String leaves its own result as it is.
func TestStringBounded(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		strings.Repeat("\x1b", 4096),
		strings.Repeat("é", 4096),
		strings.Repeat("\xff", 4096),
		strings.Repeat("\u202e", 4096),
		strings.Repeat("x", Max) + "\x1b",
		strings.Repeat("x", Max),
		strings.Repeat("x", Max+1),
	} {
		got := String(in)
		if len(got) > Max || !utf8.ValidString(got) || strings.IndexFunc(got, func(r rune) bool { return !unicode.IsGraphic(r) }) >= 0 {
			t.Errorf("String(%.20q...) = %.40q... (%d bytes)", in, got, len(got))
		}
		if again := String(got); again != got {
			t.Errorf("String is not a fixed point: %q -> %q", got, again)
		}
	}
	if got := Cut(strings.Repeat("y", 5000), 2048); len(got) > 2048 || !strings.HasSuffix(got, `"...`) {
		t.Errorf("Cut(5000 bytes, 2048) = %d bytes, ends %q", len(got), got[len(got)-8:])
	}
}

func FuzzString(f *testing.F) {
	f.Add("pending\x1b]0;PWNED\x07")
	f.Add("\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if len(got) > Max || !plain(got) || String(got) != got {
			t.Fatalf("String(%q) = %q", s, got)
		}
		if plain(s) && len(s) <= Max && got != s {
			t.Fatalf("String(%q) changed a plain value: %q", s, got)
		}
	})
}

// A value for a chat room: one printable line, bounded, with no mention,
// no Markdown link or image, whatever it held.
func TestChat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"shop.example.com":                       "shop.example.com",
		"@channel":                               "＠channel",
		"x @here @All @everyone":                 "x ＠here ＠All ＠everyone",
		"[click](https://evil.example)":          "［click］(https://evil.example)",
		"![img](https://evil.example/x.png)":     "!［img］(https://evil.example/x.png)",
		"a\n@channel":                            `"a\n＠channel"`,
		"<!channel> & <https://evil.example|hi>": "<!channel> & <https://evil.example|hi>", // ChatBody escapes these
		"evil\u202ecom":                          `"evil\u202ecom"`,
	} {
		if got := Chat(in, 100); got != want {
			t.Errorf("Chat(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzChat(f *testing.F) {
	for _, s := range []string{"@channel", "[a](b)", "a\nb", "\u2028", strings.Repeat("@[", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Chat(in, 100)
		if len(out) > 100 || strings.ContainsAny(out, "@[]\n\r") || !plain(out) {
			t.Fatalf("Chat(%q) = %q", in, out)
		}
	})
}
