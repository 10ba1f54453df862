package webhook_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/queue"
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

// Redact, for the class of echoes: the secret as written, as JSON escapes
// it, as a URL's query encodes it, with or without whsec_, and cut
// anywhere by the MaxAnswer bound: no 8 characters of the key survive.
func TestRedactEchoedSecret(t *testing.T) {
	bare := "ab/cdEFGH+ijklMNOP/qrstUVWX0123456789abcdefghijklmnopqrstuv="
	ep := &certorder.Endpoint{Secret: webhook.SecretPrefix + bare, PreviousSecret: webhook.SecretPrefix + "zz/" + bare[3:]}
	forms := []string{bare, strings.ReplaceAll(bare, "/", `\/`), url.QueryEscape(bare)}
	for _, form := range forms {
		for _, prefix := range []string{"", webhook.SecretPrefix} {
			echo := `{"configured":"` + prefix + form + `","ok":true}`
			for cut := len(`{"configured":"`) + 1; cut <= len(echo); cut++ {
				got := webhook.Redact(echo[:cut], ep)
				for _, f := range forms {
					for i := 0; i+8 <= len(f); i++ {
						if strings.Contains(got, f[i:i+8]) {
							t.Fatalf("Redact(%q) = %q: holds %q of the key", echo[:cut], got, f[i:i+8])
						}
					}
				}
			}
		}
	}
	if got := webhook.Redact(`{"ok":true,"id":"abcdefgh"}`, ep); got != `{"ok":true,"id":"abcdefgh"}` {
		t.Errorf("an answer without the key: %q", got)
	}
}

// A delivery recorded before answers were kept says so (AnswerKept false),
// rather than reading as a receiver that answered with an empty body.
func TestDeliveryAnswerKept(t *testing.T) {
	job := webhook.NewDelivery(certorder.Endpoint{ID: 1, MemberID: 2}, "order.renewed", "msg_1", []byte(`{}`))
	job.State = queue.Done
	for _, tc := range []struct {
		result string
		kept   bool
		answer string
	}{
		{`{"status":200,"class":"delivered","latency_us":5}`, false, ""},
		{`{"status":204,"class":"delivered","latency_us":5,"answer":""}`, true, ""},
		{`{"status":200,"class":"delivered","latency_us":5,"answer":"ok"}`, true, "ok"},
	} {
		job.Result = []byte(tc.result)
		d, err := webhook.DeliveryOf(job)
		if err != nil || d.AnswerKept != tc.kept || d.LastAnswer != tc.answer || d.State != webhook.StateDelivered {
			t.Errorf("%s: kept %v answer %q state %s (%v)", tc.result, d.AnswerKept, d.LastAnswer, d.State, err)
		}
	}
}
