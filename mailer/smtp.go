// Package mailer sends the notices' e-mails through the operator's SMTP
// server (github.com/wneessen/go-mail): the connection settings and their
// checks (serve's --smtp-* flags), one message as go-mail builds it, and the
// background worker that queues the order events for the members'
// addresses and sends what is due, with the webhooks' retry schedule.
package mailer

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/mail"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/certorder/certorder/internal/acmeurl"
	"github.com/certorder/certorder/internal/buildinfo"
	"github.com/certorder/certorder/notice"
)

// The connection's security (--smtp-tls).
const (
	TLSStartTLS = "starttls" // plain, then STARTTLS before anything else; refused if the server does not offer it
	TLSImplicit = "tls"      // TLS from the first byte (port 465)
	TLSNone     = "none"     // no TLS: only to a server on loopback (a local relay)
)

// UserAgent names certorder in every message (User-Agent, X-Mailer).
var UserAgent = "certorder/" + buildinfo.Get().Version

// DefaultTimeout bounds each exchange with the SMTP server.
const DefaultTimeout = 15 * time.Second

// Config is how to reach the SMTP server.
type Config struct {
	Addr     string // HOST:PORT
	TLS      string // TLSStartTLS, TLSImplicit or TLSNone
	User     string // "": no AUTH
	Password string // never logged, never in an error
	From     string // the From address: noreply@example.com, or with a name: certorder <noreply@example.com>
	// Roots verify the server's certificate; nil: the system's (SSL_CERT_FILE
	// and SSL_CERT_DIR work as for every Go program).
	Roots   *x509.CertPool
	Timeout time.Duration // each exchange; 0: DefaultTimeout
}

// Check refuses settings that cannot work or are not safe: every problem
// at once, one line each, naming its flag; the password is never quoted.
func (c Config) Check() error {
	var errs []error
	host, port, err := net.SplitHostPort(c.Addr)
	if n, perr := strconv.Atoi(port); err == nil && (perr != nil || n < 1 || n > 65535) {
		err = fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if err == nil && host == "" {
		err = errors.New("no host")
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("--smtp-addr %q: %v (want HOST:PORT, such as smtp.example.com:587)", c.Addr, err))
	}
	switch c.TLS {
	case TLSStartTLS, TLSImplicit:
	case TLSNone:
		if host != "" && !acmeurl.Loopback(host) {
			errs = append(errs, fmt.Errorf("--smtp-tls none is allowed only for a server on loopback (127.0.0.0/8, ::1, localhost), not %s: "+
				"members' addresses and the SMTP password would cross the network in clear", host))
		}
	default:
		errs = append(errs, fmt.Errorf("--smtp-tls is starttls, tls or none, not %q", c.TLS))
	}
	if (c.User == "") != (c.Password == "") {
		errs = append(errs, errors.New("--smtp-user and --smtp-password-file go together"))
	}
	if c.From == "" {
		errs = append(errs, errors.New("--mail-from is required with --smtp-addr"))
	} else if _, err := mail.ParseAddress(c.From); err != nil {
		errs = append(errs, fmt.Errorf("--mail-from %q is not an e-mail address (want noreply@example.com or \"certorder <noreply@example.com>\")", c.From))
	}
	return errors.Join(errs...)
}

// message is a notice's e-mail as go-mail sends it: both parts, the
// Message-ID, the Date, and for a notice the one-click unsubscribe headers
// (RFC 8058) and Auto-Submitted (RFC 3834: no auto-replies).
func (c Config) message(m notice.Message, now time.Time) (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithCharset(gomail.CharsetUTF8), gomail.WithEncoding(gomail.EncodingQP))
	msg.SetUserAgent(UserAgent) // User-Agent and X-Mailer: ours, not the library's
	if err := msg.From(c.From); err != nil {
		return nil, err
	}
	if err := msg.To(m.To); err != nil {
		return nil, err
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.MessageID)
	msg.SetDateWithValue(now)
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	if m.Unsubscribe != "" {
		msg.SetGenHeaderPreformatted(gomail.HeaderListUnsubscribe, "<"+m.Unsubscribe+">")
		msg.SetGenHeader(gomail.HeaderListUnsubscribePost, "List-Unsubscribe=One-Click")
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	return msg, nil
}

// failure is err as a Failure: one of a session's, or anything else
// (composing the message) as the service's.
func (c Config) failure(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return c.fail(StepConnect, err)
}

// conn is the session that a worker's round keeps open from one message to
// the next, and opens again after one failed: each round checks the relay
// again before it sends.
type conn struct {
	cfg     Config
	session *session
}

// send sends one message, dialing first if need be.
func (c *conn) send(ctx context.Context, msg io.WriterTo, to string) error {
	if c.session == nil {
		s, err := c.cfg.dial(ctx)
		if err != nil {
			return err
		}
		c.session = s
	}
	err := c.session.send(ctx, msg, to)
	if c.session.broken {
		c.close()
	}
	return err
}

func (c *conn) close() {
	if c.session != nil {
		c.session.close()
		c.session = nil
	}
}
