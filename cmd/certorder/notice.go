package main

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/acmeurl"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/mailer"
	"github.com/certorder/certorder/notice"
)

// E-mail notices: serve's SMTP settings and worker, and the operator's
// admin notice add|list|remove.

// noticeConfig is serve's notice settings.
type noticeConfig struct {
	smtpAddr, smtpTLS, smtpUser, passwordFile, caFile, mailFrom, publicURL string
}

func (c *noticeConfig) options() []option {
	return []option{
		{"smtp-addr", "CERTORDER_SMTP_ADDR", "send e-mail notices through this SMTP server, HOST:PORT (587 for starttls, 465 for tls); empty: no notices", stringVar(&c.smtpAddr, "")},
		{"smtp-tls", "CERTORDER_SMTP_TLS", "starttls, tls (from the first byte) or none (a server on loopback only)", stringVar(&c.smtpTLS, mailer.TLSStartTLS)},
		{"smtp-user", "CERTORDER_SMTP_USER", "SMTP AUTH user name; empty: no AUTH", stringVar(&c.smtpUser, "")},
		{"smtp-password-file", "CERTORDER_SMTP_PASSWORD_FILE", "file holding the SMTP AUTH password", stringVar(&c.passwordFile, "")},
		{"smtp-ca-file", "CERTORDER_SMTP_CA_FILE", "PEM file of the CA certificates that sign the SMTP server's certificate; default the system's", stringVar(&c.caFile, "")},
		{"mail-from", "CERTORDER_MAIL_FROM", "the notices' From address, e.g. \"certorder <noreply@reseller.example>\"", stringVar(&c.mailFrom, "")},
		{"public-url", "CERTORDER_PUBLIC_URL", "the service's base URL as members reach it, e.g. https://certorder.reseller.example: the links in notices and chat-room webhooks", stringVar(&c.publicURL, "")},
	}
}

// check reads the password and CA files and checks the settings: every
// problem at once, a line each naming its flag, as one usage error of cmd.
// For serve (web: whether the member page is on) notices need the public
// URL and the page, whose links they carry; admin notice test does not.
// Notices off (no --smtp-addr): nil.
func (c *noticeConfig) check(e *env, cmd string, serve, web bool) (*mailer.Config, error) {
	var errs []error
	if c.publicURL != "" {
		if err := acmeurl.Check(c.publicURL); err != nil {
			errs = append(errs, fmt.Errorf("--public-url: %v", err))
		}
	}
	if c.smtpAddr == "" {
		return nil, settingsError(cmd, errs)
	}
	switch {
	case serve && c.publicURL == "":
		errs = append(errs, errors.New("--smtp-addr needs --public-url: every notice links to the member page (its order, the one-click unsubscribe)"))
	case serve && !web:
		errs = append(errs, errors.New("--smtp-addr needs the member web page (--web): the notices' confirmation and unsubscribe links open it"))
	}
	cfg := &mailer.Config{Addr: c.smtpAddr, TLS: c.smtpTLS, User: c.smtpUser, From: c.mailFrom}
	if c.passwordFile != "" {
		pw, err := e.readSecretFile("smtp-password-file", c.passwordFile, "password file")
		if err != nil {
			errs = append(errs, err)
		}
		cfg.Password = cmp.Or(pw, "unread") // so that Check does not also say it is missing
	}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		cfg.Roots = x509.NewCertPool()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--smtp-ca-file: %v", err))
		case !cfg.Roots.AppendCertsFromPEM(pem):
			errs = append(errs, fmt.Errorf("--smtp-ca-file %s: no PEM certificate in it", c.caFile))
		}
	}
	if err := cfg.Check(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, settingsError(cmd, errs)
	}
	return cfg, nil
}

// settingsError is the problems of cmd's settings as one usage error, a
// line each ("serve: --mail-from is required with --smtp-addr"); nil for none.
func settingsError(cmd string, errs []error) error {
	var lines []string
	for _, err := range errs {
		for _, l := range strings.Split(err.Error(), "\n") {
			lines = append(lines, cmd+": "+l)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return usageError("%s", strings.Join(lines, "\n"))
}

// startNotices sends members' e-mail notices in the background until the
// function it returns is called.
func startNotices(ctx context.Context, c *serveConfig, logger *slog.Logger, store mailer.Store, reg prometheus.Registerer) func() {
	w := mailer.NewWorker(mailer.WorkerConfig{Store: store, SMTP: *c.smtp, Logger: logger, Metrics: reg,
		Texts: notice.Texts{PublicURL: c.notices.publicURL, Windows: c.windows}})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	// The password is not logged, nor the user (half of the credentials).
	logger.Info("sending notices", "smtp", c.smtp.Addr, "tls", c.smtp.TLS, "from", c.smtp.From, "auth", c.smtp.User != "")
	go probeRelay(ctx, *c.smtp, logger)
	return func() { cancel(); <-done }
}

// testNotice sends the page's test messages (nil without notices); what
// failed is logged for the operator, as the worker's failures are, since
// the member is told only its kind.
func (c *serveConfig) testNotice(logger *slog.Logger) func(context.Context, certorder.NoticeAddress) error {
	if c.smtp == nil {
		return nil
	}
	texts := notice.Texts{PublicURL: c.notices.publicURL, Windows: c.windows}
	return func(ctx context.Context, a certorder.NoticeAddress) error {
		err := c.smtp.SendTest(ctx, texts, a, time.Now())
		var f *mailer.Failure
		if errors.As(err, &f) {
			logger.Warn("test message not delivered", "address_id", a.ID, "member", a.Member, "step", f.Step, "err", f.Detail, "fix", f.Fix())
		} else if err != nil {
			logger.Warn("test message not delivered", "address_id", a.ID, "member", a.Member, "err", err)
		}
		return err
	}
}

// probeRelay checks the relay once, as serve starts (connect, TLS or
// STARTTLS, EHLO, AUTH; no message), and logs what came of it in
// certorder's words, naming the flag to change. serve goes on either way:
// the worker checks again before each round of sending.
func probeRelay(ctx context.Context, cfg mailer.Config, logger *slog.Logger) {
	err := cfg.Probe(ctx)
	var f *mailer.Failure
	switch {
	case ctx.Err() != nil:
	case err == nil:
		logger.Info("the SMTP relay is ready: connected, secured and authenticated as configured", "smtp", cfg.Addr, "tls", cfg.TLS)
	case errors.As(err, &f):
		logger.Warn("the SMTP relay cannot be used yet; serve runs on and tries again before it sends", "smtp", cfg.Addr,
			"step", f.Step, "err", f.Detail, "fix", f.Fix())
	default:
		logger.Warn("the SMTP relay cannot be used yet; serve runs on and tries again before it sends", "smtp", cfg.Addr, "err", err)
	}
}

// The operator's commands.

// noticeAdmin is what admin notice ... uses.
type noticeAdmin interface {
	FindMember(ctx context.Context, name string) (certorder.Member, error)
	storekit.MemberNoticeStore
	storekit.AuditStore
}

// noticeUnblocker is what admin notice unblock uses.
type noticeUnblocker interface {
	storekit.NoticeRecipientStore
	storekit.AuditStore
}

func (e *env) noticeAdd(fs *flag.FlagSet) adminFunc {
	lang := fs.String("lang", "en", "the messages' language: "+strings.Join(notice.Languages, " or "))
	events := fs.String("events", "", "comma-separated event types ("+strings.Join(certorder.OrderEventTypes, ", ")+"); default all")
	return role(func(ctx context.Context, store noticeAdmin, args []string) error {
		m, err := store.FindMember(ctx, args[0])
		if err != nil {
			return err
		}
		a, err := notice.NewAddress(args[1], *lang, strings.Split(*events, ","))
		if err != nil {
			return usageError("notice add: %v", err)
		}
		// The operator vouches for the address: active at once.
		a.CreatedAt = time.Now()
		a.ConfirmedAt = a.CreatedAt
		a, err = store.AddNoticeAddress(ctx, m.ID, a, certorder.MaxNoticeAddresses)
		var blocked *certorder.BlockedError
		switch {
		case errors.Is(err, certorder.ErrLimit):
			return fmt.Errorf("notice add: member %s has %d addresses already, the most it may", m.Name, certorder.MaxNoticeAddresses)
		case errors.Is(err, certorder.ErrConflict):
			return fmt.Errorf("notice add: member %s has the address %s already", m.Name, a.Address)
		case errors.As(err, &blocked):
			return fmt.Errorf("notice add: %s: the owner of %s refused certorder's messages on %s (with the link in a confirmation); "+
				"lift that only if they ask for notices: certorder admin notice unblock %s",
				a.Address, blocked.Recipient, blocked.Since.UTC().Format(certorder.DateLayout), a.Address)
		case err != nil:
			return err
		}
		auditAdmin(ctx, store, m.Name, "notice_add")
		fmt.Fprintf(e.stdout, "address %d added for member %s: %s, in %s, %s; active now\n",
			a.ID, m.Name, a.Address, a.Lang, eventsText(a.EventTypes))
		return nil
	})
}

func (e *env) noticeList(ctx context.Context, store noticeAdmin, args []string) error {
	m, err := store.FindMember(ctx, args[0])
	if err != nil {
		return err
	}
	as, err := store.NoticeAddresses(ctx, m.ID)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tLANG\tEVENTS\tSTATE\tLAST SENT\tLAST FAILURE")
	for _, a := range as {
		last, failure := "-", "-"
		if !a.LastSent.IsZero() {
			last = a.LastSent.UTC().Format(time.RFC3339)
		}
		switch {
		case a.RetryFailure != "" && !a.RetryFailedAt.Before(a.FailedAt):
			failure = fmt.Sprintf("%s %s (temporary: tried again at %s)", a.RetryFailedAt.UTC().Format(time.RFC3339),
				printable.String(a.RetryFailure), a.RetryAt.UTC().Format(time.RFC3339))
		case a.Failure != "":
			failure = a.FailedAt.UTC().Format(time.RFC3339) + " " + printable.String(a.Failure)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, printable.String(a.Address), a.Lang, eventsText(a.EventTypes),
			addressState(a), last, failure)
	}
	return tw.Flush()
}

// addressState is an address's state in words.
func addressState(a certorder.NoticeAddress) string {
	switch {
	case !a.UnsubscribedAt.IsZero():
		return "unsubscribed " + a.UnsubscribedAt.UTC().Format(time.RFC3339)
	case a.ConfirmedAt.IsZero():
		return "awaiting confirmation"
	}
	return "active"
}

func (e *env) noticeRemove(ctx context.Context, store noticeAdmin, args []string) error {
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return usageError("%q is not an address ID (see admin notice list)", args[0])
	}
	a, err := store.FindNoticeAddress(ctx, id)
	if err != nil {
		return err
	}
	if err := store.DeleteMemberNoticeAddress(ctx, a.MemberID, a.ID); err != nil {
		return err
	}
	auditAdmin(ctx, store, a.Member, "notice_remove")
	fmt.Fprintf(e.stdout, "address %d (%s) of member %s removed\n", a.ID, printable.String(a.Address), a.Member)
	return nil
}

// noticeUnblock lifts a recipient's refusal of certorder's messages, so
// that its address may be added again.
func (e *env) noticeUnblock(ctx context.Context, store noticeUnblocker, args []string) error {
	a, err := notice.NewAddress(args[0], "", nil)
	if err != nil {
		return usageError("notice unblock: %v", err)
	}
	recipient := certorder.NoticeRecipient(a.Address)
	if err := store.UnblockNoticeRecipient(ctx, recipient); errors.Is(err, certorder.ErrNotFound) {
		return fmt.Errorf("notice unblock: %s is not blocked", recipient)
	} else if err != nil {
		return err
	}
	auditAdmin(ctx, store, "", "notice_unblock")
	fmt.Fprintf(e.stdout, "%s unblocked: its addresses may be added again\n", recipient)
	return nil
}

// noticeTester is what admin notice test uses.
type noticeTester interface {
	FindMember(ctx context.Context, name string) (certorder.Member, error)
	NoticeAddresses(ctx context.Context, memberID int64) ([]certorder.NoticeAddress, error)
	storekit.AuditStore
}

// noticeTest sends a test message now through the relay serve's settings
// name (the same flags and variables), to one active address of the
// member or to each, and says what came of each: delivered, or the step
// that failed and what to change. It exits 0 only when every one was
// delivered; after a failure of the service (connect ... AUTH, MAIL FROM)
// it tries no more addresses, which would fail alike.
func (e *env) noticeTest(fs *flag.FlagSet) adminFunc {
	c := &noticeConfig{}
	opts := c.options()
	defineOptions(fs, opts)
	return role(func(ctx context.Context, store noticeTester, args []string) error {
		if err := e.applyEnv(fs, opts); err != nil {
			return err
		}
		if c.smtpAddr == "" {
			return usageError("notice test: --smtp-addr (or CERTORDER_SMTP_ADDR) names the relay to send through, as for serve")
		}
		cfg, err := c.check(e, "notice test", false, false)
		if err != nil {
			return err
		}
		m, err := store.FindMember(ctx, args[0])
		if err != nil {
			return err
		}
		if m.Disabled {
			return fmt.Errorf("notice test: member %s is disabled: nothing is sent for it until admin member enable %s", m.Name, m.Name)
		}
		as, err := store.NoticeAddresses(ctx, m.ID)
		if err != nil {
			return err
		}
		to, err := testAddresses(m.Name, as, args[1:])
		if err != nil {
			return err
		}
		texts := notice.Texts{PublicURL: c.publicURL}
		delivered := 0
		for i, a := range to {
			err := cfg.SendTest(ctx, texts, a, time.Now())
			var f *mailer.Failure
			switch {
			case err == nil:
				delivered++
				fmt.Fprintf(e.stdout, "%s: delivered: the relay %s accepted the test message\n", a.Address, cfg.Addr)
				continue
			case errors.As(err, &f):
				fmt.Fprintf(e.stdout, "%s: not delivered: %s failed: %s\n  to fix: %s\n", a.Address, f.Step, printable.Cut(f.Detail, 500), f.Fix())
			default:
				fmt.Fprintf(e.stdout, "%s: not delivered: %s\n", a.Address, printable.Cut(err.Error(), 500))
			}
			if f == nil || f.Kind() == mailer.KindService {
				for _, rest := range to[i+1:] {
					fmt.Fprintf(e.stdout, "%s: not tried: the relay failed before the recipient\n", rest.Address)
				}
				break
			}
		}
		auditAdmin(ctx, store, m.Name, "notice_test")
		if delivered < len(to) {
			return fmt.Errorf("notice test: %d of %d test messages delivered", delivered, len(to))
		}
		return nil
	})
}

// testAddresses are the addresses a test goes to: the one named (by its
// address, any case, or its ID in admin notice list), or every active one.
// Only an active address gets one: confirmed, not unsubscribed.
func testAddresses(member string, as []certorder.NoticeAddress, named []string) ([]certorder.NoticeAddress, error) {
	if len(named) == 0 {
		var active []certorder.NoticeAddress
		for _, a := range as {
			if a.Active() {
				active = append(active, a)
			}
		}
		if len(active) == 0 {
			return nil, fmt.Errorf("notice test: member %s has no active notice address (admin notice list %s; admin notice add %s ADDRESS)",
				member, member, member)
		}
		return active, nil
	}
	for _, a := range as {
		if strings.EqualFold(a.Address, named[0]) || strconv.FormatInt(a.ID, 10) == named[0] {
			if !a.Active() {
				return nil, fmt.Errorf("notice test: %s is %s: a test goes only to an active address", a.Address, addressState(a))
			}
			return []certorder.NoticeAddress{a}, nil
		}
	}
	return nil, fmt.Errorf("notice test: member %s has no notice address %s (admin notice list %s)", member, printable.String(named[0]), member)
}
