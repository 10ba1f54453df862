package mailer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/certorder/certorder"
)

// The steps of an SMTP exchange, as a Failure names them.
const (
	StepConnect  = "connect"   // TCP, and the relay's greeting
	StepTLS      = "TLS"       // the handshake of --smtp-tls tls
	StepEHLO     = "EHLO"      // the greeting of the client
	StepStartTLS = "STARTTLS"  // --smtp-tls starttls
	StepAuth     = "AUTH"      // --smtp-user
	StepMailFrom = "MAIL FROM" // the sender, --mail-from
	StepRcpt     = "RCPT"      // the recipient
	StepData     = "DATA"      // the message
)

// What a member is told of a failure (Failure.Kind), never the relay's
// address or its words: those are the operator's.
const (
	KindRecipient = "recipient" // the mail server refused the address
	KindMessage   = "message"   // it refused the message
	KindService   = "service"   // the service could not reach or use its relay: the operator's to mend
)

// Failure is an SMTP exchange that failed, in certorder's words: the
// step, the relay's reply code when it answered, and what happened, for
// the operator. An AUTH reply's text is never kept (a relay may quote the
// AUTH line, with the credentials in base64), nor the password anywhere.
type Failure struct {
	Step      string
	Code      int    // the relay's reply code; 0: no answer (the network, TLS, a time-out)
	Detail    string // one line, bounded
	Permanent bool   // a 5xx to the recipient or the message: sending again will not help

	notOffered bool // the relay lacks what the step needs (STARTTLS, AUTH)
	untrusted  bool // the relay's certificate did not verify
	notTLS     bool // the relay does not speak TLS from the first byte
}

func (f *Failure) Error() string { return f.Step + ": " + f.Detail }

// Kind is what a member is told of the failure.
func (f *Failure) Kind() string {
	switch {
	case f.Step == StepRcpt && f.Code != 0:
		return KindRecipient
	case f.Step == StepData && f.Code != 0:
		return KindMessage
	}
	return KindService
}

// Fix says what to change, naming the flag: the operator's next step.
func (f *Failure) Fix() string {
	switch {
	case f.untrusted:
		return "the relay's certificate is not trusted: give its CA with --smtp-ca-file, or check --smtp-addr names the relay its certificate is for"
	case f.notTLS:
		return "the relay does not speak TLS from the first byte: use --smtp-tls starttls (usually port 587), or its TLS port (465) in --smtp-addr"
	}
	switch f.Step {
	case StepConnect:
		if f.Code != 0 {
			return "the relay refused the connection: check --smtp-addr"
		}
		return "check --smtp-addr (HOST:PORT) and that the relay is up and reachable from this host"
	case StepTLS:
		return "check --smtp-tls (tls: TLS from the first byte, port 465) and --smtp-ca-file"
	case StepEHLO:
		return "check --smtp-addr: the server there does not take EHLO"
	case StepStartTLS:
		if f.notOffered {
			return "use --smtp-tls tls if the relay speaks TLS from the first byte (port 465), or --smtp-tls none for a relay on loopback: " +
				"certorder never sends in the clear to a relay across the network"
		}
		return "check --smtp-tls and --smtp-ca-file"
	case StepAuth:
		if f.notOffered {
			return "leave --smtp-user and --smtp-password-file empty if this relay takes mail without AUTH, or name its submission port (587) in --smtp-addr"
		}
		return "check --smtp-user and --smtp-password-file"
	case StepMailFrom:
		if f.Code == 530 || strings.Contains(f.Detail, " 5.7.0") {
			return "the relay wants AUTH: set --smtp-user and --smtp-password-file"
		}
		if f.Code == 0 || f.Code >= 500 {
			return "check --mail-from: the relay refused it as the sender"
		}
	case StepRcpt:
		if f.Code >= 500 {
			return "check the address (admin notice list); a relay that will not relay for certorder (554 5.7.1) wants --smtp-user"
		}
	case StepData:
		if f.Code >= 500 {
			return "often --mail-from: the relay checks the From domain (SPF, DKIM, DMARC); or the message's size"
		}
	}
	return "nothing: the relay asked to try again later, and certorder will"
}

// fail is err at step as a Failure, redacted: the relay's reply (an AUTH
// reply's code alone), or what the network or TLS said.
func (c Config) fail(step string, err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	f = &Failure{Step: step}
	code, reply := replyCode(err)
	switch {
	case code != 0 && step == StepAuth:
		f.Detail = fmt.Sprintf("the relay answered %d %s(its text is not kept: it may quote the credentials)", code, enhanced(reply))
	case code != 0:
		f.Detail = fmt.Sprintf("the relay answered %d %s", code, reply)
	default:
		f.Detail = err.Error()
		f.untrusted = errors.As(err, new(*tls.CertificateVerificationError))
		f.notTLS = errors.As(err, new(tls.RecordHeaderError))
	}
	f.Code = code
	f.Permanent = code >= 500 && (step == StepRcpt || step == StepData)
	if c.Password != "" {
		f.Detail = strings.ReplaceAll(f.Detail, c.Password, "[the password]")
	}
	f.Detail = cut(f.Detail)
	return f
}

// enhanced is a reply's enhanced status code (RFC 3463) and a space, ""
// if it starts with none.
func enhanced(reply string) string {
	code, _, _ := strings.Cut(reply, " ")
	if parts := strings.Split(code, "."); len(parts) == 3 && strings.Trim(code, "0123456789.") == "" && code[0] >= '2' && code[0] <= '5' {
		return code + " "
	}
	return ""
}

// maxDetail bounds a failure's detail: it is logged and stored.
const maxDetail = 400

// cut makes a relay's words one bounded line: a multi-line reply is
// joined with " / ".
func cut(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " / ")), " ")
	return certorder.Cut(s, maxDetail)
}
