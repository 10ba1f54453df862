package main

import (
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

// check reads the password and CA files and checks the settings; a
// configuration that cannot work is a usage error. Notices off: nil.
func (c *noticeConfig) check(e *env, webOn bool) (*mailer.Config, error) {
	if c.publicURL != "" {
		if err := acmeurl.Check(c.publicURL); err != nil {
			return nil, usageError("serve: --public-url: %v", err)
		}
	}
	if c.smtpAddr == "" {
		return nil, nil
	}
	switch {
	case c.publicURL == "":
		return nil, usageError("serve: --smtp-addr needs --public-url: every notice links to the member page (its order, the one-click unsubscribe)")
	case !webOn:
		return nil, usageError("serve: --smtp-addr needs the member web page (--web): the notices' confirmation and unsubscribe links open it")
	}
	cfg := &mailer.Config{Addr: c.smtpAddr, TLS: c.smtpTLS, User: c.smtpUser, From: c.mailFrom}
	if c.passwordFile != "" {
		pw, err := e.readKeyFile("serve", "smtp-password-file", c.passwordFile)
		if err != nil {
			return nil, err
		}
		cfg.Password = pw
	}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, usageError("serve: --smtp-ca-file: %v", err)
		}
		cfg.Roots = x509.NewCertPool()
		if !cfg.Roots.AppendCertsFromPEM(pem) {
			return nil, usageError("serve: --smtp-ca-file %s: no PEM certificate in it", c.caFile)
		}
	}
	if err := cfg.Check(); err != nil {
		return nil, usageError("serve: %v", err)
	}
	return cfg, nil
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
	return func() { cancel(); <-done }
}

// The operator's commands.

// noticeAdmin is what admin notice ... uses.
type noticeAdmin interface {
	FindMember(ctx context.Context, name string) (certorder.Member, error)
	storekit.MemberNoticeStore
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
		switch {
		case errors.Is(err, certorder.ErrLimit):
			return fmt.Errorf("notice add: member %s has %d addresses already, the most it may", m.Name, certorder.MaxNoticeAddresses)
		case errors.Is(err, certorder.ErrConflict):
			return fmt.Errorf("notice add: member %s has the address %s already", m.Name, a.Address)
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
		if a.Failure != "" {
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
