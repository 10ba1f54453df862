// Package smtptest is a real SMTP server on loopback for the tests of the
// e-mail notices, built on github.com/emersion/go-smtp: STARTTLS (or TLS
// from the first byte, or none) with a certificate of its own, AUTH PLAIN
// required before MAIL (or no AUTH offered), SIZE advertised and enforced,
// and the faults a test chooses: answers to MAIL FROM, to each recipient
// (451, 550, ...) and to the message, a 535 that quotes the AUTH line.
// It keeps every message it accepts, and reads them back as a mail client
// would: headers, the decoded subject, the text and HTML parts.
package smtptest

import (
	"bytes"
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The credentials the server takes.
const (
	User     = "certorder"
	Password = "s3cret-smtp-password"
)

// Server is a running test server.
type Server struct {
	Addr   string // 127.0.0.1:port
	CAFile string // PEM of its certificate, for --smtp-ca-file
	Roots  *x509.CertPool

	t   testing.TB
	srv *smtp.Server

	opts     Options
	mu       sync.Mutex
	messages []Message
	rcpts    map[string]int // RCPT TO attempts per recipient
	answer   func(rcpt string, attempt int) error
	mail     func(from string) error
	data     func() error
	arrived  chan struct{}
}

// The servers' security (Options.TLS).
const (
	StartTLS = "starttls" // plain, offering STARTTLS (the default)
	TLS      = "tls"      // TLS from the first byte
	NoTLS    = "none"     // plain, no STARTTLS: AUTH in the clear
)

// Options shape a server for what a test wants of it.
type Options struct {
	TLS string // StartTLS, TLS or NoTLS; "": StartTLS
	// QuoteAuth refuses every AUTH with a 535 that quotes the AUTH line
	// it got, the credentials in base64, as some relays do.
	QuoteAuth bool
	// NoAuth offers no AUTH; MAIL FROM then needs none.
	NoAuth bool
	// MaxBytes is the SIZE it advertises and enforces; 0: 1 MiB.
	MaxBytes int64
	// Certificate is the server's (its first certificate the leaf, and
	// CAFile's); nil: a fresh self-signed one for 127.0.0.1 and localhost.
	Certificate *tls.Certificate
}

// Message is one message the server accepted.
type Message struct {
	From string
	To   []string
	Raw  []byte
	TLS  bool // it came over TLS (STARTTLS, or from the first byte)
}

// Start starts a server until the test ends; implicitTLS serves TLS from
// the first byte (--smtp-tls tls), else STARTTLS on a plain connection.
func Start(t testing.TB, implicitTLS bool) *Server {
	t.Helper()
	return StartWithCertificate(t, implicitTLS, certificate(t))
}

// StartWithCertificate is Start with the server's certificate chosen by
// the test (its first certificate is the leaf, and CAFile's).
func StartWithCertificate(t testing.TB, implicitTLS bool, cert tls.Certificate) *Server {
	t.Helper()
	opts := Options{Certificate: &cert}
	if implicitTLS {
		opts.TLS = TLS
	}
	return StartWith(t, opts)
}

// StartWith starts a server as opts say, until the test ends.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	cert := certificate(t)
	if opts.Certificate != nil {
		cert = *opts.Certificate
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	s := &Server{t: t, opts: opts, rcpts: map[string]int{}, arrived: make(chan struct{}, 1000)}
	s.Roots = x509.NewCertPool()
	s.Roots.AppendCertsFromPEM(pemBytes)
	s.CAFile = filepath.Join(t.TempDir(), "smtp-ca.pem")
	if err := os.WriteFile(s.CAFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, conn: c}, nil }))
	s.srv.Domain = "smtp.test"
	s.srv.ErrorLog = log.New(io.Discard, "", 0) // the faults are the tests'; they say what they see
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}
	s.srv.ReadTimeout, s.srv.WriteTimeout = 10*time.Second, 10*time.Second
	s.srv.MaxMessageBytes = cmp.Or(opts.MaxBytes, 1<<20)
	var ln net.Listener
	var err error
	switch opts.TLS {
	case TLS:
		ln, err = tls.Listen("tcp", "127.0.0.1:0", tlsConfig)
	case NoTLS:
		s.srv.AllowInsecureAuth = true
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	default:
		s.srv.TLSConfig = tlsConfig
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	go s.srv.Serve(ln)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// Answer makes the server answer each RCPT TO with what answer returns
// for it (nil accepts; an *smtp.SMTPError, such as Error(451, ...), refuses);
// attempt counts that recipient's RCPT TOs, from 1.
func (s *Server) Answer(answer func(rcpt string, attempt int) error) {
	s.mu.Lock()
	s.answer = answer
	s.mu.Unlock()
}

// AnswerMail makes the server answer each MAIL FROM with what answer
// returns for it (nil accepts).
func (s *Server) AnswerMail(answer func(from string) error) {
	s.mu.Lock()
	s.mail = answer
	s.mu.Unlock()
}

// AnswerData makes the server answer each message, once it has it, with
// what answer returns (nil accepts).
func (s *Server) AnswerData(answer func() error) {
	s.mu.Lock()
	s.data = answer
	s.mu.Unlock()
}

// Error is an SMTP answer: code and text.
func Error(code int, text string) error {
	return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCodeNotSet, Message: text}
}

// Messages are the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Attempts is how many RCPT TOs named rcpt.
func (s *Server) Attempts(rcpt string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rcpts[rcpt]
}

// Wait waits until n messages in all have arrived, within d.
func (s *Server) Wait(n int, d time.Duration) []Message {
	s.t.Helper()
	deadline := time.After(d)
	for {
		if ms := s.Messages(); len(ms) >= n {
			return ms
		}
		select {
		case <-s.arrived:
		case <-deadline:
			s.t.Fatalf("%d messages arrived, want %d", len(s.Messages()), n)
		}
	}
}

type session struct {
	s      *Server
	conn   *smtp.Conn
	authed bool
	from   string
	to     []string
}

func (se *session) AuthMechanisms() []string {
	if se.s.opts.NoAuth {
		return nil
	}
	return []string{sasl.Plain}
}

func (se *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if se.s.opts.QuoteAuth {
			line := "AUTH PLAIN " + base64.StdEncoding.EncodeToString([]byte(identity+"\x00"+username+"\x00"+password))
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication failed for " + line}
		}
		if username != User || password != Password {
			return smtp.ErrAuthFailed
		}
		se.authed = true
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if !se.authed && !se.s.opts.NoAuth {
		return smtp.ErrAuthRequired
	}
	se.s.mu.Lock()
	answer := se.s.mail
	se.s.mu.Unlock()
	if answer != nil {
		if err := answer(from); err != nil {
			return err
		}
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	se.s.mu.Lock()
	se.s.rcpts[to]++
	n, answer := se.s.rcpts[to], se.s.answer
	se.s.mu.Unlock()
	if answer != nil {
		if err := answer(to, n); err != nil {
			return err
		}
	}
	se.to = append(se.to, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	se.s.mu.Lock()
	answer := se.s.data
	se.s.mu.Unlock()
	if answer != nil {
		if err := answer(); err != nil {
			return err
		}
	}
	se.s.mu.Lock()
	_, tlsOn := se.conn.TLSConnectionState()
	se.s.messages = append(se.s.messages, Message{From: se.from, To: se.to, Raw: raw, TLS: tlsOn})
	se.s.mu.Unlock()
	se.s.arrived <- struct{}{}
	return nil
}

func (se *session) Reset()        { se.from, se.to = "", nil }
func (se *session) Logout() error { return nil }

// certificate is a fresh self-signed certificate for 127.0.0.1 and
// localhost.
func certificate(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtptest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Read is a message as a mail client shows it.
type Read struct {
	Header  mail.Header
	Subject string // decoded
	Text    string // the text/plain part, decoded
	HTML    string // the text/html part, decoded
}

// Parse reads a message: its headers, its subject decoded from its MIME
// encoded-words, and its parts (multipart/alternative, or one part).
func Parse(raw []byte) (Read, error) {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Read{}, err
	}
	r := Read{Header: m.Header}
	if r.Subject, err = new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); err != nil {
		return r, err
	}
	mediaType, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		return r, err
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		body, err := decode(m.Header.Get("Content-Transfer-Encoding"), m.Body)
		r.Text = body
		return r, err
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return r, err
		}
		body, err := decode(p.Header.Get("Content-Transfer-Encoding"), p)
		if err != nil {
			return r, err
		}
		switch ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct {
		case "text/plain":
			r.Text = body
		case "text/html":
			r.HTML = body
		}
	}
}

func decode(encoding string, r io.Reader) (string, error) {
	switch strings.ToLower(encoding) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		b, err := io.ReadAll(r)
		if err != nil {
			return "", err
		}
		dec, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(b)), ""))
		return string(dec), err
	}
	b, err := io.ReadAll(r)
	return string(b), err
}
