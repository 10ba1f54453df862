package mailer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/smtptest"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/mailer"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/sqlite"
	"github.com/certorder/certorder/storetest"
)

// clock is a settable time for the worker.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// logBuffer collects the worker's log.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

type fixture struct {
	t       *testing.T
	store   *sqlite.Store
	smtp    *smtptest.Server
	clock   *clock
	log     *logBuffer
	reg     *prometheus.Registry
	worker  *mailer.Worker
	members map[string]int64
}

func newFixture(t *testing.T, implicitTLS bool) *fixture {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &fixture{t: t, store: store, smtp: smtptest.Start(t, implicitTLS), clock: &clock{t: time.Now().UTC()},
		log: &logBuffer{}, reg: prometheus.NewRegistry(), members: map[string]int64{}}
	tlsMode := mailer.TLSStartTLS
	if implicitTLS {
		tlsMode = mailer.TLSImplicit
	}
	f.worker = mailer.NewWorker(mailer.WorkerConfig{Store: store, Now: f.clock.now, Metrics: f.reg,
		Logger: slog.New(slog.NewTextHandler(f.log, nil)),
		SMTP: mailer.Config{Addr: f.smtp.Addr, TLS: tlsMode, User: smtptest.User, Password: smtptest.Password,
			From: "certorder <noreply@certorder.example>", Roots: f.smtp.Roots, Timeout: 5 * time.Second},
		Texts: notice.Texts{PublicURL: "https://certorder.example"}})
	return f
}

// address adds a confirmed address of member (created if need be).
func (f *fixture) address(member, address, lang string, events ...string) certorder.NoticeAddress {
	f.t.Helper()
	ctx := context.Background()
	if _, ok := f.members[member]; !ok {
		m, err := f.store.AddMember(ctx, member)
		if err != nil {
			f.t.Fatal(err)
		}
		f.members[member] = m.ID
	}
	a, err := notice.NewAddress(address, lang, events)
	if err != nil {
		f.t.Fatal(err)
	}
	a.ConfirmedAt = f.clock.now()
	if a, err = f.store.AddNoticeAddress(ctx, f.members[member], a, certorder.MaxNoticeAddresses); err != nil {
		f.t.Fatal(err)
	}
	return a
}

// renew imports orders old and new of member and records the renewal: one
// order.renewed event.
func (f *fixture) renew(member string, old, new int64) {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.store.ImportOrders(ctx, member, storetest.Orders(f.t, storetest.OrderJSON(old, 0, "2027-01-10"),
		storetest.OrderJSON(new, 0, "2028-01-10"))); err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.RecordRenewal(ctx, old, new); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) tick() {
	f.t.Helper()
	if err := f.worker.Tick(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

// A notice in English and one in Japanese, each one message over STARTTLS
// after AUTH: the subject (MIME-encoded in Japanese) says the order, its
// common name and what to do; both parts; Message-ID, Date, the one-click
// unsubscribe headers; never the password in the log.
func TestNoticeInBothLanguages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	en := f.address("acme", "ops@acme.example", "en")
	ja := f.address("acme", "jp@acme.example", "ja", "order.renewed")
	f.renew("acme", 10001, 10002)
	f.tick()

	ms := f.smtp.Wait(2, 10*time.Second)
	byRcpt := map[string]smtptest.Read{}
	for _, m := range ms {
		if !m.TLS || len(m.To) != 1 || m.From != "noreply@certorder.example" {
			t.Errorf("message from %s to %v, TLS %v", m.From, m.To, m.TLS)
		}
		r, err := smtptest.Parse(m.Raw)
		if err != nil {
			t.Fatal(err)
		}
		byRcpt[m.To[0]] = r
		rawSubject := string(m.Raw[bytes.Index(m.Raw, []byte("Subject:")):][:60])
		if m.To[0] == ja.Address && !strings.Contains(rawSubject, "=?UTF-8?") {
			t.Errorf("the Japanese subject is not MIME-encoded: %q", rawSubject)
		}
	}
	for addr, want := range map[string]struct{ subject, text string }{
		en.Address: {"Order 10001 (host10001.example.com) was renewed as order 10002. Follow order 10002 from now on.", "Order 10001 was renewed: the renewal is order 10002."},
		ja.Address: {"注文 10001 (host10001.example.com) は注文 10002 に更新されました。今後は注文 10002 をご確認ください。", "注文 10001 が更新されました。更新注文は注文 10002 です。"},
	} {
		r := byRcpt[addr]
		if r.Subject != want.subject {
			t.Errorf("%s: subject %q, want %q", addr, r.Subject, want.subject)
		}
		if !strings.Contains(r.Text, want.text) || !strings.Contains(r.HTML, want.text) {
			t.Errorf("%s: the parts lack %q:\n%s\n%s", addr, want.text, r.Text, r.HTML)
		}
		h := r.Header
		unsub := h.Get("List-Unsubscribe")
		if !strings.HasPrefix(unsub, "<https://certorder.example/notices/unsubscribe?t=u.") || !strings.HasSuffix(unsub, ">") ||
			h.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" || h.Get("Auto-Submitted") != "auto-generated" {
			t.Errorf("%s: unsubscribe headers %q %q", addr, unsub, h.Get("List-Unsubscribe-Post"))
		}
		if id := h.Get("Message-ID"); !strings.HasPrefix(id, "<certorder.event.") || !strings.HasSuffix(id, "@certorder.example>") {
			t.Errorf("%s: Message-ID %q", addr, id)
		}
		if d, err := h.Date(); err != nil || d.Sub(f.clock.now()).Abs() > time.Second {
			t.Errorf("%s: Date %v %v", addr, d, err)
		}
	}
	// Sent once: the next rounds send nothing.
	f.clock.add(time.Hour)
	f.tick()
	if n := len(f.smtp.Messages()); n != 2 {
		t.Errorf("%d messages after another round", n)
	}
	if got := sum(t, f.reg, "certorder_notices_sent_total"); got != 2 {
		t.Errorf("sent_total %v", got)
	}
	if strings.Contains(f.log.String(), smtptest.Password) {
		t.Errorf("the password is in the log:\n%s", f.log.String())
	}
}

// sum is the value of the registry's counter name, over its series.
func sum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// More than NoticeDailyEvents events for an address in a day: the first
// ten one by one, the rest in one digest as the day ends.
func TestDigest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true) // and TLS from the first byte
	f.clock.t = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	a := f.address("acme", "ops@acme.example", "en")
	for i := range int64(14) {
		f.renew("acme", 20000+2*i, 20001+2*i)
	}
	f.tick()
	if ms := f.smtp.Wait(certorder.NoticeDailyEvents, 10*time.Second); len(ms) != certorder.NoticeDailyEvents {
		t.Fatalf("%d messages before the day ended", len(ms))
	}
	f.clock.t = time.Date(2026, 11, 28, 0, 0, 1, 0, time.UTC)
	f.tick()
	ms := f.smtp.Wait(certorder.NoticeDailyEvents+1, 10*time.Second)
	if len(ms) != certorder.NoticeDailyEvents+1 {
		t.Fatalf("%d messages", len(ms))
	}
	r, err := smtptest.Parse(ms[len(ms)-1].Raw)
	if err != nil {
		t.Fatal(err)
	}
	if r.Subject != "certorder: 4 more events for member acme on 2026-11-27" || ms[len(ms)-1].To[0] != a.Address {
		t.Errorf("digest subject %q", r.Subject)
	}
	for i := range int64(4) {
		want := "Order " + itoa(20020+2*i) + " (host" + itoa(20020+2*i) + ".example.com) was renewed as order " + itoa(20021+2*i)
		if !strings.Contains(r.Text, want) || !strings.Contains(r.HTML, want) {
			t.Errorf("the digest lacks %q:\n%s", want, r.Text)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A 451 is tried again later and then delivered, once; a 550 is recorded
// on the address, for the member, and not tried again; a server that
// refuses the connection is tried again.
func TestRetryAndFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	later := f.address("acme", "later@acme.example", "en")
	never := f.address("acme", "never@acme.example", "en")
	f.smtp.Answer(func(rcpt string, attempt int) error {
		switch {
		case rcpt == later.Address && attempt == 1:
			return smtptest.Error(451, "greylisted, try again later")
		case rcpt == never.Address:
			return smtptest.Error(550, "no such mailbox here")
		}
		return nil
	})
	f.renew("acme", 30001, 30002)
	f.tick()
	if n := len(f.smtp.Messages()); n != 0 {
		t.Fatalf("%d messages after a 451 and a 550", n)
	}
	ctx := context.Background()
	got, err := f.store.FindNoticeAddress(ctx, never.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Failure, "RCPT: the relay answered 550") || !strings.Contains(got.Failure, "no such mailbox here") ||
		got.FailedAt.IsZero() || got.FailureKind != mailer.KindRecipient {
		t.Errorf("the 550 is not recorded: %+v", got)
	}
	// A 451 is no failure of the address's, but the operator's to see:
	// what it was, and when it is tried again.
	if got, _ := f.store.FindNoticeAddress(ctx, later.ID); got.Failure != "" || !strings.HasPrefix(got.RetryFailure, "RCPT: the relay answered 451") ||
		!got.RetryFailedAt.Equal(f.clock.now().Truncate(time.Microsecond)) || got.RetryAt.Sub(got.RetryFailedAt) < 3*time.Second {
		t.Errorf("the 451: %+v", got)
	}
	f.tick() // not due yet
	if f.smtp.Attempts(later.Address) != 1 {
		t.Fatalf("retried before the backoff: %d", f.smtp.Attempts(later.Address))
	}
	f.clock.add(10 * time.Second) // the first wait is 5 s ± 20 %
	f.tick()
	ms := f.smtp.Wait(1, 10*time.Second)
	if len(ms) != 1 || ms[0].To[0] != later.Address || f.smtp.Attempts(later.Address) != 2 || f.smtp.Attempts(never.Address) != 1 {
		t.Fatalf("after the wait: %d messages, attempts %d and %d", len(ms), f.smtp.Attempts(later.Address), f.smtp.Attempts(never.Address))
	}
	if got, _ := f.store.FindNoticeAddress(ctx, later.ID); got.RetryFailure != "" || !got.RetryAt.IsZero() || got.LastSent.IsZero() {
		t.Errorf("delivered, the retry is still recorded: %+v", got)
	}
	f.clock.add(24 * time.Hour)
	f.tick()
	if n, m := len(f.smtp.Messages()), f.smtp.Attempts(never.Address); n != 1 || m != 1 {
		t.Errorf("a day later: %d messages, %d attempts at the 550", n, m)
	}
	if got := sum(t, f.reg, "certorder_notices_failed_total"); got != 2 {
		t.Errorf("failed_total %v, want 2 (the 451 and the 550)", got)
	}

	// No server at all: tried again, and the password never logged.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	store := f.store
	w := mailer.NewWorker(mailer.WorkerConfig{Store: store, Now: f.clock.now, Logger: slog.New(slog.NewTextHandler(f.log, nil)),
		SMTP:  mailer.Config{Addr: addr, TLS: mailer.TLSStartTLS, User: "u", Password: "refused-password", From: "noreply@certorder.example"},
		Texts: notice.Texts{PublicURL: "https://certorder.example"}})
	f.renew("acme", 30003, 30004)
	if err := w.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if log := f.log.String(); !strings.Contains(log, "connection refused") || !strings.Contains(log, "trying again later") ||
		!strings.Contains(log, "step=connect") || !strings.Contains(log, "check --smtp-addr") ||
		strings.Contains(log, "refused-password") || strings.Contains(log, smtptest.Password) {
		t.Errorf("log:\n%s", log)
	}
	// The member is told a kind, never the relay's address or words.
	got, err = f.store.FindNoticeAddress(ctx, later.ID)
	if err != nil || !strings.HasPrefix(got.RetryFailure, "connect: dial tcp "+addr) {
		t.Fatalf("after the refused connection: %+v %v", got, err)
	}
}

// The settings: what would not work, or not safely, is refused with the
// flag named; the password is never quoted.
func TestConfigCheck(t *testing.T) {
	t.Parallel()
	ok := mailer.Config{Addr: "smtp.example.com:587", TLS: "starttls", User: "u", Password: "hunter2-pw", From: "noreply@example.com"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		change func(*mailer.Config)
		want   string
	}{
		{func(c *mailer.Config) { c.Addr = "smtp.example.com" }, "--smtp-addr"},
		{func(c *mailer.Config) { c.Addr = "smtp.example.com:0" }, "--smtp-addr"},
		{func(c *mailer.Config) { c.Addr = ":25" }, "--smtp-addr"},
		{func(c *mailer.Config) { c.TLS = "ssl" }, "--smtp-tls"},
		{func(c *mailer.Config) { c.TLS = "none" }, "loopback"},
		{func(c *mailer.Config) { c.Password = "" }, "--smtp-password-file"},
		{func(c *mailer.Config) { c.From = "not an address" }, "--mail-from"},
	} {
		cfg := ok
		c.change(&cfg)
		err := cfg.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2-pw") {
			t.Errorf("%+v: %v, want an error naming %s", cfg.Addr+" "+cfg.TLS, err, c.want)
		}
	}
	local := ok
	local.Addr, local.TLS = "127.0.0.1:25", "none"
	if err := local.Check(); err != nil {
		t.Errorf("none on loopback: %v", err)
	}
}

// A confirmation says who asked (the member, and the service), how to
// refuse, and carries the block link, which is its one-click unsubscribe
// too: a mail client's button refuses every later confirmation.
func TestConfirmationMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	m, err := f.store.AddMember(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"en", "ja"} {
		a, err := notice.NewAddress(lang+"@stranger.example", lang, nil)
		if err != nil {
			t.Fatal(err)
		}
		a.CreatedAt = f.clock.now()
		if _, err := f.store.AddNoticeAddress(ctx, m.ID, a, certorder.MaxNoticeAddresses); err != nil {
			t.Fatal(err)
		}
	}
	f.tick()
	for _, raw := range f.smtp.Wait(2, 10*time.Second) {
		r, err := smtptest.Parse(raw.Raw)
		if err != nil {
			t.Fatal(err)
		}
		unsub := strings.Trim(r.Header.Get("List-Unsubscribe"), "<>")
		want := map[string][]string{
			"en@stranger.example": {"Member acme of the certorder service at certorder.example asked for notices about its orders to be sent to en@stranger.example.",
				"To refuse this and every later request to send certorder messages to this address, open this link and press Refuse: " + unsub},
			"ja@stranger.example": {"certorder サービス（certorder.example）のメンバー acme が、注文に関する通知を ja@stranger.example に送るよう依頼しました。",
				"今後すべて拒否するには、次のリンクを開き、「拒否」を押してください： " + unsub},
		}[raw.To[0]]
		if !strings.HasPrefix(unsub, "https://certorder.example/notices/block?t=b.") ||
			r.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" || len(want) == 0 {
			t.Fatalf("%v: List-Unsubscribe %q %q", raw.To, unsub, r.Header.Get("List-Unsubscribe-Post"))
		}
		for _, w := range want {
			if !strings.Contains(r.Text, w) || !strings.Contains(r.HTML, strings.ReplaceAll(w, " "+unsub, "")) {
				t.Errorf("%v lacks %q:\n%s\n%s", raw.To, w, r.Text, r.HTML)
			}
		}
	}
}

// Text from elsewhere in a real message: a common name of one 1,500-byte
// word with line breaks and controls, and a hostile status, in both
// languages; every line of the message as sent is within RFC 5322's 998
// octets, the subject as read is one printable line, no header is added.
func TestHostileTextInAMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.address("acme", "en@acme.example", "en")
	f.address("acme", "ja@acme.example", "ja")
	cn := strings.Repeat("W", 1500) + "\r\nBcc: victim@example.com\r\n\x1b[2J\u202e"
	quoted, _ := json.Marshal(cn)
	doc := strings.Replace(storetest.OrderJSON(40001, 0, "2027-01-10"), `"common_name":"host40001.example.com"`,
		`"common_name":`+string(quoted), 1)
	ctx := context.Background()
	if _, err := f.store.ImportOrders(ctx, "acme", storetest.Orders(t, doc)); err != nil {
		t.Fatal(err)
	}
	revoked := strings.Replace(doc, `"status":"issued","product"`, `"status":"revoked\r\nX-Evil: 1","product"`, 1)
	if _, err := f.store.ImportOrders(ctx, "acme", storetest.Orders(t, revoked)); err != nil {
		t.Fatal(err)
	}
	f.tick()
	for _, m := range f.smtp.Wait(2, 10*time.Second) {
		for i, line := range strings.Split(string(m.Raw), "\r\n") {
			if len(line) > 998 {
				t.Errorf("%v: line %d has %d octets", m.To, i, len(line))
			}
		}
		r, err := smtptest.Parse(m.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Header["Bcc"]) != 0 || len(r.Header["X-Evil"]) != 0 || strings.ContainsAny(r.Subject, "\r\n\x1b\u202e") ||
			len(r.Subject) > 400 || !strings.Contains(r.Subject, "40001") {
			t.Errorf("%v: subject %q, headers %v", m.To, r.Subject, r.Header)
		}
	}
}

// A day of 1,000 events for an address: ten messages, then one digest
// that lists MaxDigestItems of the rest, says how many more, and links the
// page; the relay's SIZE (1 MiB here) is not reached.
func TestDigestBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.clock.t = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	f.address("acme", "ops@acme.example", "en")
	var docs, revoked []string
	for i := range 1000 {
		doc := storetest.OrderJSON(int64(50000+i), 0, "2027-01-10")
		docs = append(docs, doc)
		revoked = append(revoked, strings.Replace(doc, `"status":"issued","product"`, `"status":"revoked","product"`, 1))
	}
	ctx := context.Background()
	for _, batch := range [][]string{docs, revoked} {
		if _, err := f.store.ImportOrders(ctx, "acme", storetest.Orders(t, batch...)); err != nil {
			t.Fatal(err)
		}
	}
	f.tick()
	f.smtp.Wait(certorder.NoticeDailyEvents, 20*time.Second)
	f.clock.t = time.Date(2026, 11, 28, 0, 0, 1, 0, time.UTC)
	f.tick()
	ms := f.smtp.Wait(certorder.NoticeDailyEvents+1, 20*time.Second)
	digest := ms[len(ms)-1]
	r, err := smtptest.Parse(digest.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if r.Subject != "certorder: 990 more events for member acme on 2026-11-27" || strings.Count(r.Text, "Open the order:") != notice.MaxDigestItems ||
		!strings.Contains(r.Text, "890 more events of that day are not listed here") || !strings.Contains(r.Text, "https://certorder.example/orders") ||
		len(digest.Raw) > 1<<20 {
		t.Errorf("digest of %d bytes: %q\n%s", len(digest.Raw), r.Subject, r.Text[len(r.Text)-600:])
	}
}

// Nothing is mailed for a disabled member: not its events, not the
// confirmation of its address; enabled again, its next events are.
func TestDisabledMemberNotMailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	f.address("acme", "ops@acme.example", "en")
	a, err := notice.NewAddress("new@acme.example", "en", nil)
	if err != nil {
		t.Fatal(err)
	}
	a.CreatedAt = f.clock.now()
	if _, err := f.store.AddNoticeAddress(ctx, f.members["acme"], a, certorder.MaxNoticeAddresses); err != nil {
		t.Fatal(err)
	}
	if err := f.store.SetMemberDisabled(ctx, "acme", true); err != nil {
		t.Fatal(err)
	}
	f.renew("acme", 60001, 60002)
	f.tick()
	f.clock.add(time.Hour)
	f.tick()
	if n := len(f.smtp.Messages()); n != 0 {
		t.Fatalf("%d messages for a disabled member", n)
	}
	if err := f.store.SetMemberDisabled(ctx, "acme", false); err != nil {
		t.Fatal(err)
	}
	f.renew("acme", 60003, 60004)
	f.tick()
	if ms := f.smtp.Wait(1, 10*time.Second); len(ms) != 1 || ms[0].To[0] != "ops@acme.example" {
		t.Fatalf("enabled again: %d messages", len(ms))
	}
}
