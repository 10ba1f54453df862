// Package mailer sends the notices' e-mails through the operator's SMTP
// server (github.com/wneessen/go-mail): the connection settings and their
// checks (serve's --smtp-* flags), one message as go-mail builds it, and the
// background worker that queues the order events for the members'
// addresses and sends what is due, with the webhooks' retry schedule.
package mailer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/certorder/certorder/internal/acmeurl"
	"github.com/certorder/certorder/notice"
)

// The connection's security (--smtp-tls).
const (
	TLSStartTLS = "starttls" // plain, then STARTTLS before anything else; refused if the server does not offer it
	TLSImplicit = "tls"      // TLS from the first byte (port 465)
	TLSNone     = "none"     // no TLS: only to a server on loopback (a local relay)
)

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

// Check refuses settings that cannot work or are not safe, saying which
// flag is wrong; the password is never quoted.
func (c Config) Check() error {
	host, port, err := net.SplitHostPort(c.Addr)
	if n, perr := strconv.Atoi(port); err == nil && (perr != nil || n < 1 || n > 65535) {
		err = fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if err == nil && host == "" {
		err = errors.New("no host")
	}
	if err != nil {
		return fmt.Errorf("--smtp-addr %q: %v (want HOST:PORT, such as smtp.example.com:587)", c.Addr, err)
	}
	switch c.TLS {
	case TLSStartTLS, TLSImplicit:
	case TLSNone:
		if !acmeurl.Loopback(host) {
			return fmt.Errorf("--smtp-tls none is allowed only for a server on loopback (127.0.0.0/8, ::1, localhost), not %s: "+
				"members' addresses and the SMTP password would cross the network in clear", host)
		}
	default:
		return fmt.Errorf("--smtp-tls is starttls, tls or none, not %q", c.TLS)
	}
	if (c.User == "") != (c.Password == "") {
		return errors.New("--smtp-user and --smtp-password-file go together")
	}
	if _, err := mail.ParseAddress(c.From); err != nil || c.From == "" {
		return fmt.Errorf("--mail-from %q is not an e-mail address (want noreply@example.com or \"certorder <noreply@example.com>\")", c.From)
	}
	return nil
}

// client is a go-mail client for the configuration.
func (c Config) client() (*gomail.Client, error) {
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	opts := []gomail.Option{gomail.WithTimeout(timeout),
		gomail.WithTLSConfig(&tls.Config{ServerName: host, RootCAs: c.Roots, MinVersion: tls.VersionTLS12})}
	switch c.TLS {
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if c.User != "" {
		// Over TLS the strongest mechanism the server offers; in the clear
		// (loopback only) PLAIN, which go-mail sends only to a local host.
		auth := gomail.SMTPAuthAutoDiscover
		if c.TLS == TLSNone {
			auth = gomail.SMTPAuthPlain
		}
		opts = append(opts, gomail.WithSMTPAuth(auth), gomail.WithUsername(c.User), gomail.WithPassword(c.Password))
	}
	opts = append(opts, gomail.WithPort(p)) // after WithSSL, which sets its own default
	return gomail.NewClient(host, opts...)
}

// message is a notice's e-mail as go-mail sends it: both parts, the
// Message-ID, the Date, and for a notice the one-click unsubscribe headers
// (RFC 8058) and Auto-Submitted (RFC 3834: no auto-replies).
func (c Config) message(m notice.Message, now time.Time) (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithCharset(gomail.CharsetUTF8), gomail.WithEncoding(gomail.EncodingQP))
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

// failure says why a message was not sent, and whether the mail server
// refused it for good: a 5xx answer to its recipient or its content. Any
// other failure (4xx, no connection, TLS, AUTH, a 5xx to MAIL FROM: the
// service's own settings) is temporary: tried again later.
func failure(err error) (text string, permanent bool) {
	var se *gomail.SendError
	if !errors.As(err, &se) {
		return err.Error(), false
	}
	text = se.Error()
	// go-mail adds the recipients and the Message-ID: the member knows both.
	if i := strings.Index(text, ", affected recipient"); i >= 0 {
		text = text[:i]
	}
	if i := strings.Index(text, ", affected message ID"); i >= 0 {
		text = text[:i]
	}
	switch se.Reason {
	case gomail.ErrSMTPRcptTo, gomail.ErrSMTPData, gomail.ErrSMTPDataClose, gomail.ErrWriteContent:
		return text, se.ErrorCode() >= 500
	}
	return text, false
}

// conn is a connection to the SMTP server that a worker's round keeps
// open from one message to the next, and opens again after one failed.
type conn struct {
	cfg    Config
	client *gomail.Client
	dialed bool
}

// send sends one message, dialing first if need be.
func (c *conn) send(ctx context.Context, msg *gomail.Msg) error {
	if !c.dialed {
		client, err := c.cfg.client()
		if err != nil {
			return err
		}
		if err := client.DialWithContext(ctx); err != nil {
			return fmt.Errorf("connecting to the SMTP server %s: %w", c.cfg.Addr, err)
		}
		c.client, c.dialed = client, true
	}
	err := c.client.Send(msg)
	var se *gomail.SendError
	if err != nil && (!errors.As(err, &se) || se.ErrorCode() == 0) {
		c.close() // not an answer to this message: the connection is in doubt
	}
	return err
}

func (c *conn) close() {
	if c.dialed {
		c.client.Close()
		c.dialed = false
	}
}
