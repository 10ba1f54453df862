package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"strings"
	"syscall"
	"time"

	"github.com/certorder/certorder/internal/deploytarget"
)

// prober reads the certificates servers present.
type prober struct {
	timeout  time.Duration // each target's: connection, STARTTLS and handshake
	starttls string        // "" (TLS from the first byte) or "smtp"
}

// starttlsProtocols are the values --starttls takes.
var starttlsProtocols = []string{"smtp"}

// ehloName is the name certorder deployed greets an SMTP server with: it
// sends no mail, so it claims no domain (RFC 5321 allows an address
// literal; net/smtp's own default is "localhost").
const ehloName = "localhost"

// probeError is why a target's certificate could not be read: the target,
// not the service (exit code 6).
type probeError struct {
	what string // in words, with what to check
	err  error
}

func (e *probeError) Error() string { return e.what + ": " + e.err.Error() }
func (e *probeError) Unwrap() error { return e.err }

// certificates connects to t and returns the certificates its server
// presents, the leaf first. It does not trust them: nothing is sent over
// the connection, so a certificate that does not verify is read all the
// same, and verifyChain says so separately.
func (p prober) certificates(ctx context.Context, t deploytarget.Target, serverName string) ([]*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if reservedInvalid(t.Host) {
		return nil, &probeError{"the host name does not resolve", &net.DNSError{Err: "no such host (RFC 6761: .invalid never resolves)", Name: t.Host, IsNotFound: true}}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", t.String())
	if err != nil {
		return nil, p.dialError(err, t)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) }) // an interrupt, too
	defer stop()
	cfg := &tls.Config{
		ServerName: serverName, // an IP address is not sent as SNI (RFC 6066), as browsers do
		// Only the certificate is wanted: it is checked apart, by
		// verifyChain, so that one that does not verify is still read.
		InsecureSkipVerify: true,
		MinVersion:         tls.VersionTLS10, // an old server's certificate is read as well
	}
	var state tls.ConnectionState
	switch p.starttls {
	case "smtp":
		if state, err = smtpStartTLS(conn, t.Host, cfg); err != nil {
			return nil, p.sessionError(err)
		}
	default:
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, p.sessionError(err)
		}
		state = tc.ConnectionState()
		tc.Close()
	}
	if len(state.PeerCertificates) == 0 {
		return nil, &probeError{"no TLS", errors.New("the server presented no certificate")}
	}
	return state.PeerCertificates, nil
}

// smtpStartTLS greets a mail server (EHLO) and asks it for STARTTLS (RFC
// 3207), then leaves (QUIT).
func smtpStartTLS(conn net.Conn, host string, cfg *tls.Config) (tls.ConnectionState, error) {
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return tls.ConnectionState{}, fmt.Errorf("no SMTP greeting: %w", err)
	}
	if err := c.Hello(ehloName); err != nil {
		return tls.ConnectionState{}, fmt.Errorf("EHLO: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		return tls.ConnectionState{}, &probeError{"no TLS", errors.New("the mail server does not offer STARTTLS")}
	}
	if err := c.StartTLS(cfg); err != nil {
		return tls.ConnectionState{}, fmt.Errorf("STARTTLS: %w", err)
	}
	state, _ := c.TLSConnectionState()
	c.Quit() // a courtesy: the certificate is read
	return state, nil
}

// reservedInvalid reports whether host is under .invalid, which RFC 6761
// (section 6.4) reserves for names that never resolve, and asks resolvers
// to answer at once: no query leaves the machine for it.
func reservedInvalid(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "invalid" || strings.HasSuffix(h, ".invalid")
}

// dialError says why a connection could not be made.
func (p prober) dialError(err error, t deploytarget.Target) error {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return &probeError{"the host name does not resolve", err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &probeError{fmt.Sprintf("connection refused (nothing listens on port %d)", t.Port), err}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return &probeError{fmt.Sprintf("no connection within --connect-timeout %s", p.timeout), err}
	}
	return &probeError{"cannot connect", err}
}

// sessionError says why a connection made gave no certificate.
func (p prober) sessionError(err error) error {
	var pe *probeError
	switch {
	case errors.As(err, &pe):
		return err
	case isTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		return &probeError{fmt.Sprintf("no TLS handshake within --connect-timeout %s", p.timeout), err}
	}
	return &probeError{"no TLS", err}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// verifyChain checks the certificates a server presented against the
// system's roots for serverName, as a client that trusts them would.
func verifyChain(certs []*x509.Certificate, serverName string) error {
	intermediates := x509.NewCertPool()
	for _, c := range certs[1:] {
		intermediates.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{DNSName: serverName, Intermediates: intermediates})
	return err
}
