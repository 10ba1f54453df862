// Package printable holds certorder's one rule for text that came from
// elsewhere (CertCentral, an import, the service's answers, a webhook
// receiver, a caller) and is shown to a person, on a terminal or in a log,
// or kept in a record that is shown later: it is escaped, so that it cannot
// move the cursor, retitle the window or reorder what follows, and bounded,
// so that one value cannot fill a screen, a log or a stored record.
//
// Every command's human output, the sync's summary and run record, and the
// errors a command prints go through it; JSON output never does (it stays
// exact, and JSON escapes control characters itself). The notices' words
// put every value from elsewhere (a common name, a CertCentral status)
// through Cut in an e-mail (its subject, its text and HTML parts: one line,
// never a line of its own) and through Chat in a chat room's message.
package printable

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Max is the most bytes String returns: room for any one value certorder
// shows (a DNS name is at most 253 bytes), not for a page of them.
const Max = 256

// cut follows the closing quote of a value that was cut short.
const cut = `"...`

// String returns s as it may be shown: s itself when it is at most Max
// bytes of graphic characters; else quoted and escaped as
// strconv.QuoteToGraphic does (a control character such as ESC, a tab or
// a line break, a bidirectional or zero-width format character, invalid
// UTF-8), cut short to at most Max bytes with "..." after the quote. Its
// result is a fixed point: String(String(s)) == String(s).
func String(s string) string { return Cut(s, Max) }

// Strings is String of each.
func Strings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return out
}

// Cut is String with a bound of n bytes (at least 16) instead of Max, for
// a message made of several values, such as an error.
func Cut(s string, n int) string {
	n = max(n, 16)
	if len(s) <= n && plain(s) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var esc string
		if r == utf8.RuneError && size == 1 {
			esc = fmt.Sprintf(`\x%02x`, s[i])
		} else {
			q := strconv.QuoteToGraphic(s[i : i+size])
			esc = q[1 : len(q)-1]
		}
		if b.Len()+len(esc)+len(cut) > n {
			b.WriteString(cut)
			return b.String()
		}
		b.WriteString(esc)
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// plain reports whether s is valid UTF-8 of graphic characters only.
func plain(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}

// chatMarkup is what a chat room (Slack, Mattermost, Rocket.Chat) reads in
// a message's text as an action on people: an @ mentions (@channel, @here,
// @all, @everyone, a user), brackets make a Markdown link or image
// ([text](url), ![alt](url)). Each becomes its full-width form, which reads
// the same to a person and does nothing.
var chatMarkup = strings.NewReplacer("@", "\uff20", "[", "\uff3b", "]", "\uff3d")

// Chat is Cut for a value in a chat room's message: besides, no mention,
// link or image of its own. (&, < and > are escaped for the whole message,
// as Slack asks: webhook.ChatBody; a line break cannot come through Cut.)
func Chat(s string, n int) string { return Cut(chatMarkup.Replace(s), n) }
