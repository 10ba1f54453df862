package main

import (
	"context"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/internal/smtptest"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/stores"
)

// relayArgs are the --smtp-* flags for s, without --public-url.
func relayArgs(t *testing.T, s *smtptest.Server, tlsMode string) []string {
	return []string{"--smtp-addr", s.Addr, "--smtp-tls", tlsMode, "--smtp-user", smtptest.User, "--smtp-password-file", passwordFile(t),
		"--smtp-ca-file", s.CAFile, "--mail-from", "certorder <noreply@certorder.test>"}
}

// admin notice test: a test message now, to each active address or the one
// named, through the relay serve's flags (or variables) name; delivered,
// or the step that failed and the flag to change, exit 0 only when every
// one was delivered; the settings' problems all at once.
func TestAdminNoticeTest(t *testing.T) {
	t.Parallel()
	dsn := testdb.SQLite(t)
	c := newStoreCLI(t, dsn)
	relay := smtptest.Start(t, false)
	c.ok("admin", "member", "add", "acme")
	c.ok("admin", "notice", "add", "acme", "ops@acme.example", "--lang", "ja")
	c.ok("admin", "notice", "add", "acme", "dev@acme.example")
	s, err := stores.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := s.FindMember(context.Background(), "acme")
	_, err = s.AddNoticeAddress(context.Background(), m.ID, certorder.NoticeAddress{Address: "pending@acme.example", Lang: "en",
		Secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQ=", CreatedAt: time.Now()}, 5)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}

	// Every active address, and only those (not the one awaiting its confirmation).
	out := c.ok(append([]string{"admin", "notice", "test", "acme"}, relayArgs(t, relay, "starttls")...)...)
	for _, want := range []string{"ops@acme.example: delivered: the relay " + relay.Addr + " accepted the test message",
		"dev@acme.example: delivered"} {
		if !strings.Contains(out, want) {
			t.Errorf("notice test:\n%s\nwant %q", out, want)
		}
	}
	ms := relay.Wait(2, 10*time.Second)
	for _, raw := range ms {
		r, err := smtptest.Parse(raw.Raw)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"ops@acme.example": "certorder からのテストメッセージ（メンバー acme）",
			"dev@acme.example": "A test message from certorder for member acme"}[raw.To[0]]
		if r.Subject != want || !strings.HasPrefix(r.Header.Get("X-Mailer"), "certorder/") ||
			strings.Contains(string(raw.Raw), "go-mail") || !raw.TLS {
			t.Errorf("to %v: subject %q, X-Mailer %q, TLS %v", raw.To, r.Subject, r.Header.Get("X-Mailer"), raw.TLS)
		}
	}
	// The variables serve reads, and one address named (any case).
	env := newCLI(t, dsn)
	for k, v := range map[string]string{"CERTORDER_SMTP_ADDR": relay.Addr, "CERTORDER_SMTP_USER": smtptest.User,
		"CERTORDER_SMTP_PASSWORD_FILE": passwordFile(t), "CERTORDER_SMTP_CA_FILE": relay.CAFile,
		"CERTORDER_MAIL_FROM": "noreply@certorder.test", "CERTORDER_PUBLIC_URL": "https://certorder.test"} {
		env.env[k] = v
	}
	if out := env.ok("admin", "notice", "test", "acme", "DEV@acme.example"); strings.Count(out, "delivered") != 1 {
		t.Errorf("one address: %s", out)
	}
	r, _ := smtptest.Parse(relay.Wait(3, 10*time.Second)[2].Raw)
	if !strings.Contains(r.Text, "https://certorder.test/notices/unsubscribe?t=u.") {
		t.Errorf("with --public-url, the test message has its links:\n%s", r.Text)
	}
	if msg := env.fails(1, "admin", "notice", "test", "acme", "pending@acme.example"); !strings.Contains(msg, "awaiting confirmation") {
		t.Errorf("an address awaiting confirmation: %s", msg)
	}
	if msg := env.fails(1, "admin", "notice", "test", "acme", "nobody@acme.example"); !strings.Contains(msg, "has no notice address nobody@acme.example") {
		t.Errorf("an address not the member's: %s", msg)
	}

	// Each step that fails, through a relay that fails it.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	plain := smtptest.StartWith(t, smtptest.Options{TLS: smtptest.NoTLS})
	quoting := smtptest.StartWith(t, smtptest.Options{QuoteAuth: true})
	refusing := smtptest.Start(t, false)
	refusing.Answer(func(string, int) error { return smtptest.Error(550, "no such mailbox") })
	content := smtptest.Start(t, false)
	content.AnswerData(func() error { return smtptest.Error(554, "content refused") })
	with := func(s *smtptest.Server, change ...string) []string {
		args := relayArgs(t, s, "starttls")
		for i := 0; i < len(change); i += 2 {
			for j := range args {
				if args[j] == change[i] {
					args[j+1] = change[i+1]
				}
			}
		}
		return args
	}
	noUser := []string{"--smtp-addr", relay.Addr, "--smtp-ca-file", relay.CAFile, "--mail-from", "noreply@certorder.test"}
	creds := base64.StdEncoding.EncodeToString([]byte("\x00" + smtptest.User + "\x00" + smtptest.Password))
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"nothing listens", with(relay, "--smtp-addr", closed), []string{"not delivered: connect failed", "check --smtp-addr", "not tried"}},
		{"TLS to a plain relay", with(relay, "--smtp-tls", "tls"), []string{"not delivered: TLS failed", "--smtp-tls starttls"}},
		{"no STARTTLS", with(plain), []string{"not delivered: STARTTLS failed: the relay does not offer STARTTLS", "--smtp-tls tls"}},
		{"a wrong password", with(relay, "--smtp-password-file", writeFile(t, "wrong-password")),
			[]string{"not delivered: AUTH failed: the relay answered 535", "--smtp-password-file"}},
		{"a 535 quoting the AUTH line", with(quoting), []string{"AUTH failed", "its text is not kept"}},
		{"AUTH needed", noUser, []string{"not delivered: MAIL FROM failed: the relay answered 502 5.7.0", "set --smtp-user and --smtp-password-file"}},
		{"the recipient refused", with(refusing), []string{"ops@acme.example: not delivered: RCPT failed: the relay answered 550",
			"dev@acme.example: not delivered: RCPT failed"}},
		{"the message refused", with(content), []string{"not delivered: DATA failed: the relay answered 554", "--mail-from"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := c.run("", append([]string{"admin", "notice", "test", "acme"}, tc.args...)...)
			if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "test messages delivered") {
				t.Fatalf("exit %d (%v), want 1\n%s%s", exitCode(err), err, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, secret := range []string{smtptest.Password, creds, creds[:24]} {
				if strings.Contains(out+errOut, secret) {
					t.Errorf("a secret in the output:\n%s%s", out, errOut)
				}
			}
		})
	}

	// The settings: every problem at once, a line each, naming its flag.
	msg := c.fails(exitUsage, "admin", "notice", "test", "acme", "--smtp-addr", "smtp.example.com", "--smtp-tls", "ssl",
		"--smtp-user", "u", "--public-url", "ftp://x")
	for _, want := range []string{"notice test: --public-url", "notice test: --smtp-addr \"smtp.example.com\"",
		"notice test: --smtp-tls is starttls, tls or none, not \"ssl\"", "notice test: --smtp-user and --smtp-password-file go together",
		"notice test: --mail-from is required with --smtp-addr"} {
		if !strings.Contains(msg, want+"") {
			t.Errorf("settings:\n%s\nwant %q", msg, want)
		}
	}
	c.fails(exitUsage, "admin", "notice", "test", "acme") // no relay named

	// A password file every user may read is warned about, as a password file.
	public := writeFile(t, smtptest.Password)
	if err := os.Chmod(public, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := c.run("", append([]string{"admin", "notice", "test", "acme"}, with(relay, "--smtp-password-file", public)...)...)
	if err != nil || !strings.Contains(errOut, "warning: the password file "+public+" is readable by every user (mode 0644)") {
		t.Errorf("a public password file: %v\n%s", err, errOut)
	}
}

// serve checks the relay as it starts, and says what it found in
// certorder's words naming the flag; it serves either way. Its settings'
// problems come all at once.
func TestServeChecksRelay(t *testing.T) {
	t.Parallel()
	c := newStoreCLI(t, testdb.SQLite(t))
	relay := smtptest.Start(t, false)
	msg := c.fails(exitUsage, "serve", "--addr", "127.0.0.1:0", "--smtp-addr", relay.Addr, "--smtp-tls", "ssl")
	for _, want := range []string{"serve: --smtp-addr needs --public-url", "serve: --smtp-tls is starttls, tls or none, not \"ssl\"",
		"serve: --mail-from is required with --smtp-addr"} {
		if !strings.Contains(msg, want) {
			t.Errorf("serve's settings:\n%s\nwant %q", msg, want)
		}
	}

	good := &syncBuffer{}
	startServeWith(t, c, good, smtpArgs(t, relay)...)
	poll.Until(t, 20*time.Second, "serve says the relay is ready", func() bool {
		return strings.Contains(good.String(), "the SMTP relay is ready")
	})
	plain := smtptest.StartWith(t, smtptest.Options{TLS: smtptest.NoTLS})
	bad := &syncBuffer{}
	endpoint, _ := startServeWith(t, c, bad, smtpArgs(t, plain)...)
	poll.Until(t, 20*time.Second, "serve says the relay cannot be used", func() bool {
		return strings.Contains(bad.String(), "the SMTP relay cannot be used yet")
	})
	if log := bad.String(); !strings.Contains(log, "step=STARTTLS") || !strings.Contains(log, "--smtp-tls tls") {
		t.Errorf("serve's log:\n%s", log)
	}
	if len(relay.Messages())+len(plain.Messages()) != 0 {
		t.Error("the check sent a message")
	}
	if status, _ := post(t, endpoint, `{"action":"Auth"}`); status == 0 {
		t.Error("serve does not answer")
	}
}

// writeFile writes text to a file of the test's, readable by its owner.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// admin notice list shows the last temporary failure and when it is tried
// again, not only a permanent one; a success clears both.
func TestNoticeListRetry(t *testing.T) {
	t.Parallel()
	dsn := testdb.SQLite(t)
	c := newStoreCLI(t, dsn)
	c.ok("admin", "member", "add", "acme")
	c.ok("admin", "notice", "add", "acme", "ops@acme.example")
	s, err := stores.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	finish := func(a storekit.NoticeAttempt) {
		t.Helper()
		a.At = at
		if err := s.RecordNoticeAttempt(context.Background(), 1, a); err != nil {
			t.Fatal(err)
		}
	}
	finish(storekit.NoticeAttempt{Failure: "RCPT: the relay answered 550 no such mailbox", FailureKind: "recipient"})
	at = at.Add(time.Hour)
	finish(storekit.NoticeAttempt{RetryAt: at.Add(5 * time.Minute),
		Failure: "AUTH: the relay answered 454 4.7.0 (its text is not kept: it may quote the credentials)", FailureKind: "service"})
	want := "2026-11-28T10:00:00Z AUTH: the relay answered 454 4.7.0 (its text is not kept: it may quote the credentials) " +
		"(temporary: tried again at 2026-11-28T10:05:00Z)"
	if list := c.ok("admin", "notice", "list", "acme"); !strings.Contains(list, want) {
		t.Errorf("notice list:\n%s\nwant %q", list, want)
	}
	finish(storekit.NoticeAttempt{Sent: true})
	if list := c.ok("admin", "notice", "list", "acme"); !strings.Contains(list, "active  2026-11-28T10:00:00Z  -") {
		t.Errorf("after a success:\n%s", list)
	}
}
