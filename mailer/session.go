package mailer

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/mail"
	"net/textproto"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wneessen/go-mail/smtp"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
)

// A session is one connection to the relay, opened step by step (connect,
// TLS or STARTTLS, EHLO, AUTH) and then used for messages (MAIL FROM, RCPT,
// DATA), so that a failure names the step it happened at: go-mail's own
// dial says only what its SMTP library said. The messages are go-mail's
// (Config.message), the protocol its smtp package's.
type session struct {
	cfg    Config
	conn   net.Conn
	client *smtp.Client
	size   int64 // the relay's SIZE (RFC 1870); 0: it states none
	broken bool  // a failure without an answer: the connection is in doubt
}

// dial opens a session: connected, greeted, secured as --smtp-tls says,
// authenticated when --smtp-user is set. A failure is a *Failure.
func (c Config) dial(ctx context.Context) (*session, error) {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return nil, &Failure{Step: StepConnect, Detail: err.Error()}
	}
	conn, err := (&net.Dialer{Timeout: c.timeout()}).DialContext(ctx, "tcp", c.Addr)
	if err != nil {
		return nil, c.fail(StepConnect, err)
	}
	s := &session{cfg: c, conn: conn}
	stop := s.watch(ctx)
	defer stop()
	if err := s.open(host); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// open does the steps after the connection.
func (s *session) open(host string) error {
	c := s.cfg
	s.conn.SetDeadline(time.Now().Add(c.timeout()))
	tlsConfig := &tls.Config{ServerName: host, RootCAs: c.Roots, MinVersion: tls.VersionTLS12}
	conn := s.conn
	if c.TLS == TLSImplicit {
		tc := tls.Client(conn, tlsConfig)
		if err := tc.Handshake(); err != nil {
			return c.fail(StepTLS, err)
		}
		conn = tc
	}
	client, err := smtp.NewClient(conn, host) // reads the greeting
	if err != nil {
		return c.fail(StepConnect, err)
	}
	s.client = client
	helo, err := os.Hostname()
	if err != nil || helo == "" {
		helo = "localhost"
	}
	if err := client.Hello(helo); err != nil {
		return c.fail(StepEHLO, err)
	}
	if c.TLS == TLSStartTLS {
		if ok, _ := client.Extension("STARTTLS"); !ok {
			return &Failure{Step: StepStartTLS, Detail: "the relay does not offer STARTTLS", notOffered: true}
		}
		client.UpdateDeadline(c.timeout())
		if err := client.StartTLS(tlsConfig); err != nil {
			return c.fail(StepStartTLS, err)
		}
	}
	if c.User != "" {
		client.UpdateDeadline(c.timeout())
		if err := s.auth(host); err != nil {
			return err
		}
	}
	if ok, size := client.Extension("SIZE"); ok {
		s.size, _ = strconv.ParseInt(size, 10, 64)
	}
	return nil
}

// auth authenticates with the strongest mechanism the relay offers (the
// order go-mail prefers, without NTLM); PLAIN and LOGIN only over TLS or
// to a relay on loopback (Config.Check allows no other in the clear).
func (s *session) auth(host string) error {
	c := s.cfg
	ok, mechs := s.client.Extension("AUTH")
	if !ok {
		return &Failure{Step: StepAuth, Detail: "the relay offers no AUTH", notOffered: true}
	}
	offered := strings.Fields(strings.ToUpper(mechs))
	state, secured := s.client.TLSConnectionState()
	plus := func(m string) bool { return secured && slices.Contains(offered, m) }
	has := func(m string) bool { return slices.Contains(offered, m) }
	clear := c.TLS == TLSNone
	var a smtp.Auth
	switch {
	case plus("SCRAM-SHA-256-PLUS"):
		a = smtp.ScramSHA256PlusAuth(c.User, c.Password, &state)
	case has("SCRAM-SHA-256"):
		a = smtp.ScramSHA256Auth(c.User, c.Password)
	case plus("SCRAM-SHA-1-PLUS"):
		a = smtp.ScramSHA1PlusAuth(c.User, c.Password, &state)
	case has("SCRAM-SHA-1"):
		a = smtp.ScramSHA1Auth(c.User, c.Password)
	case has("CRAM-MD5"):
		a = smtp.CRAMMD5Auth(c.User, c.Password)
	case has("PLAIN"):
		a = smtp.PlainAuth("", c.User, c.Password, host, clear)
	case has("LOGIN"):
		a = smtp.LoginAuth(c.User, c.Password, host, clear)
	default:
		return &Failure{Step: StepAuth, Detail: fmt.Sprintf("the relay offers no AUTH mechanism certorder speaks (it offers %s)", cut(mechs)),
			notOffered: true}
	}
	if err := s.client.Auth(a); err != nil {
		return c.fail(StepAuth, err)
	}
	return nil
}

// send sends one message from the From address to one recipient. A
// failure is a *Failure; after a refusal (an answer) the session may send
// the next message, after any other failure it is broken.
func (s *session) send(ctx context.Context, m io.WriterTo, to string) error {
	stop := s.watch(ctx)
	defer stop()
	c := s.cfg
	s.client.UpdateDeadline(c.timeout())
	from, err := c.sender()
	if err != nil {
		return &Failure{Step: StepMailFrom, Detail: cut(err.Error())}
	}
	// Rendered first, to be measured: a message over the relay's SIZE
	// would be refused at its end; it is not sent at all.
	var raw bytes.Buffer
	if _, err := m.WriteTo(&raw); err != nil {
		return &Failure{Step: StepData, Detail: cut(err.Error())}
	}
	if s.size > 0 && int64(raw.Len()) > s.size {
		return &Failure{Step: StepData, Code: 552, Permanent: true,
			Detail: fmt.Sprintf("the message is %d bytes, more than the relay's SIZE of %d", raw.Len(), s.size)}
	}
	if err := s.client.Mail(from); err != nil {
		return s.refused(c.fail(StepMailFrom, err))
	}
	if err := s.client.Rcpt(to); err != nil {
		return s.refused(c.fail(StepRcpt, err))
	}
	w, err := s.client.Data()
	if err != nil {
		return s.refused(c.fail(StepData, err))
	}
	// The message is written under the deadline of its size: a few seconds a MiB.
	s.client.UpdateDeadline(c.timeout())
	if _, err := w.Write(raw.Bytes()); err != nil {
		s.broken = true
		return c.fail(StepData, err)
	}
	if err := w.Close(); err != nil {
		return s.refused(c.fail(StepData, err))
	}
	return nil
}

// refused ends the transaction after the relay refused a command, so that
// the session can go on; a failure without an answer leaves it in doubt.
func (s *session) refused(err error) error {
	var f *Failure
	s.broken = !errors.As(err, &f) || f.Code == 0 || s.client.Reset() != nil
	return err
}

// watch ends the session's I/O when ctx ends, until stop is called.
func (s *session) watch(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() { s.conn.SetDeadline(time.Unix(1, 0)) })
}

// close says QUIT when it can, and closes the connection.
func (s *session) close() {
	if s.client != nil {
		s.client.UpdateDeadline(time.Second)
		s.client.Quit()
	}
	s.conn.Close()
}

// sender is the envelope's From: the --mail-from address without its name.
func (c Config) sender() (string, error) {
	a, err := mail.ParseAddress(c.From)
	if err != nil {
		return "", err
	}
	return a.Address, nil
}

func (c Config) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// Probe checks the relay as serve does at start: connect, TLS or
// STARTTLS, EHLO, AUTH; no message. A failure is a *Failure.
func (c Config) Probe(ctx context.Context) error {
	s, err := c.dial(ctx)
	if err != nil {
		return err
	}
	s.close()
	return nil
}

// replyCode is the SMTP reply code of err, 0 if the relay did not answer.
func replyCode(err error) (int, string) {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code, te.Msg
	}
	return 0, ""
}

// SendTest sends a test message (notice.Texts.TestMessage) to address a
// now, over a session of its own: admin notice test, and the page's "Send
// a test message". A failure to reach or use the relay is a *Failure.
func (c Config) SendTest(ctx context.Context, texts notice.Texts, a certorder.NoticeAddress, now time.Time) error {
	m, err := texts.TestMessage(a, now)
	if err != nil {
		return err
	}
	msg, err := c.message(m, now)
	if err != nil {
		return err
	}
	s, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	return s.send(ctx, msg, a.Address)
}
