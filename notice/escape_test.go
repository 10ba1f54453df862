package notice_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/webhook"
)

// hostile are values from elsewhere (an imported order's common name, a
// CertCentral status) that would forge a line, move the cursor, reorder
// what follows, hide, or act on a chat room.
var hostile = []string{
	"a.example\r\nOpen the order: https://evil.example/phish",
	"a.example\nBcc: victim@example.com",
	"\x1b]0;pwned\x07\x1b[2J",
	"evil\u202eelpmaxe.com",
	"zero\u200bwidth.example",
	"line\u2028separator\u2029paragraph",
	strings.Repeat("W", 1500),
	"@channel <!here> @everyone @all @here <!channel|x>",
	"[click here](https://evil.example) ![pixel](https://evil.example/p.png)",
	"bad\xffutf8",
}

// told is a status change of an order whose common name and status are v.
func told(v string) notice.Told {
	o := order(10001, "2027-02-20", "2027-03-01", 0, certorder.RenewalNone)
	o.Certificate.CommonName = v
	data := `{"order_id":10001,"status":` + jsonString(v) + `,"previous_status":` + jsonString(v) + `}`
	return notice.Told{Event: event("order.status_changed", data), Order: o, Now: now}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range []byte(s) {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteByte(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteByte(r)
		}
	}
	return b.String() + `"`
}

// oneLine reports whether s is one line of graphic characters (spaces
// included) of at most n bytes.
func oneLine(s string, n int) bool {
	if len(s) > n || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}

var mentions = regexp.MustCompile(`(?i)@(channel|here|all|everyone)|<!|\]\(|!\[`)

// Text from elsewhere, as a class, in every output: a subject and a
// digest's item are one printable line, bounded; the text and HTML parts
// have the lines they have with harmless values, each starting with our
// words; a chat room's line has no mention, link, image or line break.
func TestOutsideText(t *testing.T) {
	t.Parallel()
	texts := notice.Texts{PublicURL: "https://certorder.example"}
	a, _ := notice.NewAddress("ops@example.com", "en", nil)
	a.ID, a.Member = 3, "acme"
	lines := func(s string) []string { return strings.Split(s, "\n") }
	for _, lang := range notice.Languages {
		a.Lang = lang
		plain, err := texts.Compose(notice.Notice{ID: 1, Kind: notice.KindEvent, Address: a}, []notice.Told{told("a.example")}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range hostile {
			m, err := texts.Compose(notice.Notice{ID: 1, Kind: notice.KindEvent, Address: a}, []notice.Told{told(v)}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !oneLine(m.Subject, 400) {
				t.Errorf("%s %q: subject %q", lang, v, m.Subject)
			}
			for part, got := range map[string][]string{"text": lines(m.Text), "html": lines(m.HTML)} {
				want := map[string][]string{"text": lines(plain.Text), "html": lines(plain.HTML)}[part]
				if len(got) != len(want) {
					t.Errorf("%s %q: the %s part has %d lines, not %d:\n%s", lang, v, part, len(got), len(want), strings.Join(got, "\n"))
					continue
				}
				for i := range got {
					if w := strings.Fields(want[i]); len(w) > 0 && !strings.HasPrefix(got[i], w[0]) {
						t.Errorf("%s %q: %s line %d %q does not start with our %q", lang, v, part, i, got[i], w[0])
					}
					if !oneLine(got[i], 2000) {
						t.Errorf("%s %q: %s line %d not printable: %q", lang, v, part, i, got[i])
					}
				}
			}
			if strings.Contains(m.HTML, "<script") || strings.Contains(m.HTML, `href="https://evil`) {
				t.Errorf("%s %q: the HTML part:\n%s", lang, v, m.HTML)
			}
		}
	}
	for _, v := range hostile {
		if got := chatText(t, texts, v); !oneLine(got, 600) || mentions.MatchString(got) {
			t.Errorf("chat %q: %q", v, got)
		}
	}
}

// chatText is the text a chat room gets for a status change with value v:
// the line as webhook.ChatBody sends it, Slack's escapes applied.
func chatText(t *testing.T, texts notice.Texts, v string) string {
	var m struct{ Text string }
	if err := json.Unmarshal(webhook.ChatBody(texts.ChatLine(told(v))), &m); err != nil {
		t.Fatal(err)
	}
	return m.Text
}

// Whatever the common name and the status, the line and the chat line
// are one printable bounded line, and the chat line acts on no one.
func FuzzLine(f *testing.F) {
	for _, v := range hostile {
		f.Add(v)
	}
	texts := notice.Texts{PublicURL: "https://certorder.example"}
	f.Fuzz(func(t *testing.T, v string) {
		for _, lang := range notice.Languages {
			if got := texts.Line(lang, told(v)); !oneLine(got, 400) {
				t.Fatalf("%s Line(%q) = %q", lang, v, got)
			}
		}
		if got := chatText(t, texts, v); !oneLine(got, 600) || mentions.MatchString(got) {
			t.Fatalf("the chat text of %q: %q", v, got)
		}
	})
}
