package server_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/smtptest"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/mailer"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/webhook"
)

// "Send a test message": each active address has the button (not one
// awaiting confirmation); it says delivered, or the kind of failure, never
// the relay's address or words; it counts with the webhooks' test events.
// A recorded failure is shown as its kind, and a recipient's refusal of an
// address nobody has confirmed not at all.
func TestWebNoticeTest(t *testing.T) {
	t.Parallel()
	relay := smtptest.Start(t, false)
	relay.Answer(func(rcpt string, _ int) error {
		if rcpt == "nobody@acme.example" {
			return smtptest.Error(550, "no such mailbox here")
		}
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	cfg := mailer.Config{Addr: relay.Addr, TLS: mailer.TLSStartTLS, User: smtptest.User, Password: smtptest.Password,
		From: "noreply@certorder.example", Roots: relay.Roots, Timeout: 5 * time.Second}
	f, base := webFixture(t, server.Config{Notices: true, AuditRetention: time.Hour, PrivateWebhooks: true,
		TestNotice: func(ctx context.Context, a certorder.NoticeAddress) error {
			c := cfg
			if a.Address == "down@acme.example" {
				c.Addr = down
			}
			return c.SendTest(ctx, notice.Texts{PublicURL: "https://certorder.example"}, a, time.Now())
		}})
	ctx := context.Background()
	alice := aliceID(t, f)
	add := func(address string, confirmed bool) certorder.NoticeAddress {
		t.Helper()
		a, err := notice.NewAddress(address, "en", nil)
		if err != nil {
			t.Fatal(err)
		}
		a.CreatedAt = today
		if confirmed {
			a.ConfirmedAt = today
		}
		if a, err = f.store.AddNoticeAddress(ctx, alice, a, certorder.MaxNoticeAddresses); err != nil {
			t.Fatal(err)
		}
		return a
	}
	ops, nobody, downA, pending := add("ops@acme.example", true), add("nobody@acme.example", true), add("down@acme.example", true),
		add("pending@acme.example", false)
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	list := b.get("/notices")
	csrf := list.csrf(t)
	for _, a := range []certorder.NoticeAddress{ops, nobody, downA} {
		mustContain(t, "the button of "+a.Address, list, fmt.Sprintf(`action="/notices/%d/test"`, a.ID))
	}
	if strings.Contains(list.body, fmt.Sprintf(`action="/notices/%d/test"`, pending.ID)) {
		t.Error("an address awaiting confirmation has the button")
	}
	mustContain(t, "an address's own page", b.get(fmt.Sprintf("/notices/%d", ops.ID)), fmt.Sprintf(`action="/notices/%d/test"`, ops.ID),
		">Send a test message<")
	test := func(a certorder.NoticeAddress) page {
		return b.post(fmt.Sprintf("/notices/%d/test", a.ID), url.Values{"csrf": {csrf}})
	}

	p := test(ops)
	mustContain(t, "a delivered test", p, "A test message was sent to ops@acme.example: the mail server accepted it")
	if p.status != http.StatusOK || len(relay.Wait(1, 10*time.Second)) != 1 {
		t.Fatalf("a delivered test: %d", p.status)
	}
	for _, c := range []struct {
		a    certorder.NoticeAddress
		want string
	}{
		{nobody, "The mail server refused the address nobody@acme.example."},
		{downA, "the mail service could not reach its relay. Your reseller has been told"},
	} {
		p := test(c.a)
		mustContain(t, "a failed test", p, c.want)
		for _, secret := range []string{relay.Addr, down, "550", "no such mailbox", "127.0.0.1:"} {
			if strings.Contains(p.body, secret) {
				t.Errorf("the page shows the relay's %q:\n%s", secret, p.body)
			}
		}
		if p.status != http.StatusBadGateway {
			t.Errorf("a failed test: %d", p.status)
		}
	}
	if p := test(pending); p.status != http.StatusConflict || !strings.Contains(p.body, "pending@acme.example is not active") {
		t.Errorf("a test to an address awaiting confirmation: %d", p.status)
	}
	// Three test messages so far; a webhook test event, then the limit.
	_, _, endpoint := b.addWebhook(relayURL(t))
	if p := b.post(fmt.Sprintf("/webhooks/%d/test", endpoint), url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("a webhook test event: %d", p.status)
	}
	for range webhook.TestBurst - 4 {
		test(ops)
	}
	p = test(ops)
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" ||
		!strings.Contains(p.body, "Too many test messages and webhook test events: 5 at most") {
		t.Errorf("beyond the limit: %d %q", p.status, p.header.Get("Retry-After"))
	}

	// Recorded failures: a kind, never the relay's words; a recipient's
	// refusal of an address nobody confirmed not at all.
	for _, a := range []struct {
		addr certorder.NoticeAddress
		kind string
	}{{nobody, mailer.KindRecipient}, {pending, mailer.KindRecipient}, {downA, mailer.KindService}} {
		if err := f.store.RecordNoticeAttempt(ctx, a.addr.ID, storekit.NoticeAttempt{At: today, FailureKind: a.kind,
			Failure: "RCPT: the relay 127.0.0.9:48943 answered 550 no such mailbox"}); err != nil {
			t.Fatal(err)
		}
	}
	list = b.get("/notices")
	mustContain(t, "the recorded failures", list, "the mail server refused this address: check it",
		"the mail service could not reach its relay; your reseller has been told")
	if strings.Count(list.body, "refused this address") != 1 || strings.Contains(list.body, "127.0.0.9") || strings.Contains(list.body, "550") {
		t.Errorf("the page tells more than a kind, or of the unconfirmed address:\n%s", list.body)
	}

	f.handler.Close()
	entries, err := f.store.Audit(ctx, certorder.AuditQuery{Member: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Action, "web NoticeTest ") {
			n++
		}
	}
	if n != 3+webhook.TestBurst-4 { // ops, nobody, down; the webhook's; then the rest of the burst
		t.Errorf("%d test messages in the audit trail", n)
	}
}

// relayURL is a webhook receiver's URL on loopback that answers 200.
func relayURL(t *testing.T) string {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/hook"
}
