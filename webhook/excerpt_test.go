package webhook_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/webhook"
)

// AnswerExcerpt: at most MaxExcerpt bytes, cut at a character, printable,
// spaces collapsed, secrets redacted; a short answer is kept as it is.
func TestAnswerExcerpt(t *testing.T) {
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	ep := &certorder.Endpoint{Secret: secret}
	for _, tc := range []struct{ in, want string }{
		{`{"ok":true}`, `{"ok":true}`},
		{"  \r\n ok \t\x00 thanks\u200b\n", "ok thanks"},
		{"", ""},
		{"key " + secret, "key whsec_(redacted)"},
		{"bare " + strings.TrimPrefix(secret, "whsec_"), "bare (redacted)"},
		{"other whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY", "other whsec_(redacted)"},
	} {
		if got := webhook.AnswerExcerpt(tc.in, ep); got != tc.want {
			t.Errorf("AnswerExcerpt(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, long := range []string{strings.Repeat("受信しました", 40), strings.Repeat("a", 1024), strings.Repeat("é", 150)} {
		got := webhook.AnswerExcerpt(long, ep)
		if len(got) > webhook.MaxExcerpt || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) < webhook.MaxExcerpt-8 {
			t.Errorf("AnswerExcerpt of %d bytes: %d bytes %q", len(long), len(got), got)
		}
	}
}
