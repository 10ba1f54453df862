// Package smtptest is a real SMTP server on loopback for the tests of the
// e-mail notices, built on github.com/emersion/go-smtp: STARTTLS (or TLS
// from the first byte) with a certificate of its own, AUTH PLAIN required
// before MAIL, and answers a test chooses per recipient (451, 550, ...).
// It keeps every message it accepts, and reads them back as a mail client
// would: headers, the decoded subject, the text and HTML parts.
package smtptest

import (
	"bytes"
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

	mu       sync.Mutex
	messages []Message
	rcpts    map[string]int // RCPT TO attempts per recipient
	answer   func(rcpt string, attempt int) error
	arrived  chan struct{}
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
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	s := &Server{t: t, rcpts: map[string]int{}, arrived: make(chan struct{}, 1000)}
	s.Roots = x509.NewCertPool()
	s.Roots.AppendCertsFromPEM(pemBytes)
	s.CAFile = filepath.Join(t.TempDir(), "smtp-ca.pem")
	if err := os.WriteFile(s.CAFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, conn: c}, nil }))
	s.srv.Domain = "smtp.test"
	s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.srv.ReadTimeout, s.srv.WriteTimeout = 10*time.Second, 10*time.Second
	s.srv.MaxMessageBytes = 1 << 20
	var ln net.Listener
	var err error
	if implicitTLS {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", s.srv.TLSConfig)
	} else {
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

func (se *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (se *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != User || password != Password {
			return smtp.ErrAuthFailed
		}
		se.authed = true
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if !se.authed {
		return smtp.ErrAuthRequired
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
