package mailer_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/smtptest"
	"github.com/certorder/certorder/mailer"
	"github.com/certorder/certorder/notice"
)

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Every step of an SMTP exchange that can fail, through a real server that
// fails it: the failure names the step, says what to change (the flag),
// tells the member only a kind, and is permanent only for the recipient
// or the message; the password and an AUTH reply's text are never in it.
func TestFailureSteps(t *testing.T) {
	t.Parallel()
	ok := func(s *smtptest.Server, tlsMode string) mailer.Config {
		return mailer.Config{Addr: s.Addr, TLS: tlsMode, User: smtptest.User, Password: smtptest.Password,
			From: "certorder <noreply@certorder.example>", Roots: s.Roots, Timeout: 5 * time.Second}
	}
	starttls := smtptest.StartWith(t, smtptest.Options{})
	implicit := smtptest.StartWith(t, smtptest.Options{TLS: smtptest.TLS})
	plain := smtptest.StartWith(t, smtptest.Options{TLS: smtptest.NoTLS})
	quoting := smtptest.StartWith(t, smtptest.Options{QuoteAuth: true})
	noAuth := smtptest.StartWith(t, smtptest.Options{NoAuth: true})
	small := smtptest.StartWith(t, smtptest.Options{MaxBytes: 2000})
	sender := smtptest.StartWith(t, smtptest.Options{})
	sender.AnswerMail(func(string) error { return smtptest.Error(550, "sender not allowed") })
	refusing := smtptest.StartWith(t, smtptest.Options{})
	refusing.Answer(func(rcpt string, _ int) error {
		switch rcpt {
		case "nobody@acme.example":
			return smtptest.Error(550, "no such mailbox")
		case "later@acme.example":
			return smtptest.Error(451, "greylisted")
		}
		return nil
	})
	content := smtptest.StartWith(t, smtptest.Options{})
	content.AnswerData(func() error { return smtptest.Error(554, "rejected by content policy") })

	for _, c := range []struct {
		name      string
		cfg       func() mailer.Config
		to        string
		step      string
		fix, kind string
		permanent bool
		detail    string // in the detail
	}{
		{"nothing listens", func() mailer.Config { c := ok(starttls, "starttls"); c.Addr = closedPort(t); return c }, "",
			mailer.StepConnect, "--smtp-addr", mailer.KindService, false, ""},
		{"TLS to a plain relay", func() mailer.Config { return ok(starttls, "tls") }, "",
			mailer.StepTLS, "--smtp-tls starttls", mailer.KindService, false, ""},
		{"TLS, an unknown CA", func() mailer.Config { c := ok(implicit, "tls"); c.Roots = nil; return c }, "",
			mailer.StepTLS, "--smtp-ca-file", mailer.KindService, false, ""},
		{"no STARTTLS offered", func() mailer.Config { return ok(plain, "starttls") }, "",
			mailer.StepStartTLS, "--smtp-tls tls", mailer.KindService, false, ""},
		{"STARTTLS, an unknown CA", func() mailer.Config { c := ok(starttls, "starttls"); c.Roots = nil; return c }, "",
			mailer.StepStartTLS, "--smtp-ca-file", mailer.KindService, false, ""},
		{"a wrong password", func() mailer.Config { c := ok(starttls, "starttls"); c.Password = "wrong-password-123"; return c }, "",
			mailer.StepAuth, "--smtp-password-file", mailer.KindService, false, ""},
		{"a 535 quoting the AUTH line", func() mailer.Config { return ok(quoting, "starttls") }, "",
			mailer.StepAuth, "--smtp-user", mailer.KindService, false, "answered 535 5.7.8 (its text is not kept"},
		{"no AUTH offered", func() mailer.Config { return ok(noAuth, "starttls") }, "",
			mailer.StepAuth, "leave --smtp-user", mailer.KindService, false, ""},
		{"AUTH needed, none set", func() mailer.Config { c := ok(starttls, "starttls"); c.User, c.Password = "", ""; return c }, "",
			mailer.StepMailFrom, "set --smtp-user", mailer.KindService, false, ""},
		{"the sender refused", func() mailer.Config { return ok(sender, "starttls") }, "",
			mailer.StepMailFrom, "--mail-from", mailer.KindService, false, ""},
		{"the recipient refused", func() mailer.Config { return ok(refusing, "starttls") }, "nobody@acme.example",
			mailer.StepRcpt, "check the address", mailer.KindRecipient, true, "550"},
		{"the recipient greylisted", func() mailer.Config { return ok(refusing, "starttls") }, "later@acme.example",
			mailer.StepRcpt, "try again later", mailer.KindRecipient, false, ""},
		{"the message refused", func() mailer.Config { return ok(content, "starttls") }, "",
			mailer.StepData, "--mail-from", mailer.KindMessage, true, ""},
		{"over the relay's SIZE", func() mailer.Config { return ok(small, "starttls") }, "",
			mailer.StepData, "size", mailer.KindMessage, true, "more than the relay's SIZE of 2000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := c.cfg()
			to := c.to
			if to == "" {
				to = "ops@acme.example"
			}
			a := certorder.NoticeAddress{ID: 1, Member: "acme", Address: to, Lang: "en", Secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQ="}
			err := cfg.SendTest(context.Background(), notice.Texts{PublicURL: "https://certorder.example"}, a, time.Now())
			var f *mailer.Failure
			if !errors.As(err, &f) {
				t.Fatalf("%v, want a *mailer.Failure", err)
			}
			if f.Step != c.step || !strings.Contains(f.Fix(), c.fix) || f.Kind() != c.kind || f.Permanent != c.permanent ||
				!strings.Contains(f.Detail, c.detail) {
				t.Errorf("step %q, fix %q, kind %q, permanent %v: %s", f.Step, f.Fix(), f.Kind(), f.Permanent, f.Detail)
			}
			creds := base64.StdEncoding.EncodeToString([]byte("\x00" + smtptest.User + "\x00" + smtptest.Password))
			for _, secret := range []string{smtptest.Password, "wrong-password-123", creds, creds[:20]} {
				if strings.Contains(f.Error(), secret) {
					t.Errorf("the failure quotes a secret: %s", f.Error())
				}
			}
			if strings.ContainsAny(f.Detail, "\r\n") || len(f.Detail) > 400 {
				t.Errorf("detail not one bounded line: %q", f.Detail)
			}
		})
	}
	// The probe goes as far as AUTH, and sends nothing.
	t.Run("the probe", func(t *testing.T) {
		t.Parallel()
		if err := ok(starttls, "starttls").Probe(context.Background()); err != nil {
			t.Errorf("probe: %v", err)
		}
		if err := ok(implicit, "tls").Probe(context.Background()); err != nil {
			t.Errorf("probe, TLS: %v", err)
		}
		if len(starttls.Messages()) != 0 {
			t.Error("the probe sent a message")
		}
	})
}
