package main

import (
	"crypto/x509"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/deploytarget"
	"github.com/certorder/certorder/internal/printable"
)

// What certorder deployed says of a target: --json's state, and the
// second word of its line.
const (
	stateCurrent     = "current"     // the order's current certificate, not ending within --warn-days
	stateReplaced    = "replaced"    // a certificate a reissue of its order replaced
	stateRenewed     = "renewed"     // a certificate of an order whose renewal is issued
	stateEnding      = "ending"      // the current one, ending within --warn-days (or of an order ended)
	stateUnknown     = "unknown"     // not a certificate of the member's orders, or the service could not say
	stateUnreachable = "unreachable" // no certificate read: no name, no connection, no TLS
)

// deployReport is one target's answer: its exported fields are --json's
// object, each present, null when not known.
type deployReport struct {
	Host                string  `json:"host"`
	Port                int     `json:"port"`
	ServerName          string  `json:"servername"`
	SerialNumber        *string `json:"serial_number"`
	Thumbprint          *string `json:"thumbprint"`
	NotAfter            *string `json:"not_after"`
	DaysLeft            *int    `json:"days_left"`
	OrderID             *int64  `json:"order_id"`
	IsCurrent           *bool   `json:"is_current"`
	State               string  `json:"state"`
	CurrentSerialNumber *string `json:"current_serial_number"`
	NewestOrderID       *int64  `json:"newest_order_id"`
	Error               *string `json:"error"`

	target  deploytarget.Target
	code    int    // the target's exit code
	subject string // the served certificate's common name, escaped, for the line
	detail  string // what the line says after the state, escaped
	next    string // the order's next step when one is due, else ""
	warning string // a line for stderr: the chain does not verify
	warn    int    // the days within which the served certificate is ending
}

// serialForm is a serial number as blackbox_exporter's
// probe_ssl_last_chain_info labels it (serialnumber): lower-case
// hexadecimal of its octets, two digits each, no colons. A serial that is
// not hexadecimal is left as it is.
func serialForm(s string) string {
	key, ok := certorder.ParseSerial(s)
	n, ok2 := new(big.Int).SetString(key, 16)
	if !ok || !ok2 {
		return s
	}
	return serialOctets(n)
}

func serialOctets(n *big.Int) string { return fmt.Sprintf("%x", n.Bytes()) }

// served records the certificate the target presented.
func (r *deployReport) served(leaf *x509.Certificate, now time.Time) {
	serial, thumb := serialOctets(leaf.SerialNumber), client.ThumbprintOf(leaf)
	notAfter := leaf.NotAfter.UTC()
	days := certorder.DaysRemaining(notAfter.Format(certorder.DateLayout), now)
	till := notAfter.Format(time.RFC3339)
	r.SerialNumber, r.Thumbprint, r.NotAfter, r.DaysLeft = &serial, &thumb, &till, &days
	r.subject = "no common name"
	if cn := leaf.Subject.CommonName; cn != "" {
		r.subject = "CN " + printable.String(cn)
	}
}

// failed is a target without an order: unreachable, or not placed by the
// service.
func (r *deployReport) failed(state string, code int, err error) *deployReport {
	msg := err.Error()
	r.State, r.code, r.Error, r.detail = state, code, &msg, printable.Cut(msg, maxErrorLine)
	return r
}

// judge is the one rule of certorder deployed: the state of a certificate
// of order o (isCurrent as CertificateCheck said), whose chain and next
// step are given, against r.warn days (explicit: --warn-days gave them).
// A renewal issued comes first (what to deploy is another order's), then a
// reissue, then the order's end, then the days left.
func (r *deployReport) judge(o *client.Order, isCurrent bool, chain []int64, next certorder.NextStep, explicit bool) {
	id := o.OrderID
	r.detail = fmt.Sprintf("order %d", id)
	switch {
	case next.Step == certorder.StepRenewed:
		r.State = stateRenewed
		newest := chain[len(chain)-1]
		r.detail += fmt.Sprintf(", renewed: the newest order of its chain (%s) is %d", chainText(chain), newest)
		if newest != next.Renewal {
			r.detail += fmt.Sprintf(" (order %d's certificate is issued)", next.Renewal)
		}
	case !isCurrent:
		r.State = stateReplaced
		cur := o.Certificate
		if cur.SerialNumber == "" {
			r.detail += fmt.Sprintf(", replaced by a reissue: the order's next certificate awaits issuance (status %s)", printable.String(o.Status))
			break
		}
		on := ""
		if d := issuedOn(cur); d != "" {
			on = " on " + printable.String(d)
		}
		r.detail += fmt.Sprintf(", replaced by a reissue%s: the order's current certificate is serial %s (valid till %s)",
			on, printable.String(serialForm(cur.SerialNumber)), printable.String(cur.ValidTill.Raw))
	case next.Step == certorder.StepEnded:
		r.State = stateEnding
		r.detail += fmt.Sprintf(" is %s: it will have no further certificate", printable.String(o.Status))
	case *r.DaysLeft <= r.warn:
		r.State = stateEnding
		if explicit {
			r.detail += fmt.Sprintf(", ending within --warn-days %d", r.warn)
		} else {
			r.detail += fmt.Sprintf(", ending within its reissue window (%d days)", r.warn)
		}
	default:
		r.State = stateCurrent
	}
	if r.State != stateCurrent {
		r.code = exitReplaced
	}
	if next.Step != certorder.StepNone || next.Due != "" {
		r.next = stepText(next)
	}
}

// where names the target: HOST:PORT, and the name asked for when it is
// not the host.
func (r *deployReport) where() string {
	s := r.target.String()
	if r.ServerName != r.target.Host {
		s += " (servername " + r.ServerName + ")"
	}
	return s
}

// line is the target's line: where, the state, what it means, the served
// certificate and its days, the next step.
func (r *deployReport) line() string {
	s := r.where() + ": " + r.State + ": " + r.detail
	if r.SerialNumber != nil {
		s += fmt.Sprintf("; serial %s (%s), %s (till %s)", *r.SerialNumber, r.subject, daysText(*r.DaysLeft), (*r.NotAfter)[:len(certorder.DateLayout)])
	}
	if r.next != "" {
		s += "; next step: " + r.next
	}
	return s
}

func daysText(days int) string {
	if days < 0 {
		return fmt.Sprintf("expired %d days ago", -days)
	}
	return fmt.Sprintf("%d days left", days)
}

// The exit codes of --nagios (the Nagios plugin API, which Icinga and
// Sensu follow).
const (
	nagiosOK       = 0
	nagiosWarning  = 1
	nagiosCritical = 2
	nagiosUnknown  = 3
)

// nagiosStatus is a target's plugin status: something to do is a warning,
// and critical once the served certificate has expired; another
// certificate or none at all is critical; a check that could not be made
// (credentials, the service) is unknown.
func (r *deployReport) nagiosStatus() int {
	switch {
	case r.code == 0:
		return nagiosOK
	case r.code == exitReplaced && *r.DaysLeft >= 0:
		return nagiosWarning
	case r.code == exitReplaced, r.code == exitNoSuchOrder, r.State == stateUnreachable:
		return nagiosCritical
	}
	return nagiosUnknown
}

// nagiosRank orders the plugin statuses by how bad they are.
var nagiosRank = map[int]int{nagiosOK: 0, nagiosWarning: 1, nagiosUnknown: 2, nagiosCritical: 3}

// nagiosLine is --nagios's one line and exit code: the worst status, the
// targets that are not fine (or how many are), and each served
// certificate's days left as performance data.
func nagiosLine(reports []*deployReport) (int, string) {
	status := nagiosOK
	var bad, perf []string
	for _, r := range reports {
		s := r.nagiosStatus()
		if nagiosRank[s] > nagiosRank[status] {
			status = s
		}
		if s != nagiosOK {
			bad = append(bad, r.target.String()+" "+r.State)
		}
		if r.DaysLeft != nil {
			// Ranges: "N:" alerts below N; ending is within warn days, inclusive.
			perf = append(perf, fmt.Sprintf("'%s days_left'=%d;%d:;0:", r.target, *r.DaysLeft, r.warn+1))
		}
	}
	words := map[int]string{nagiosOK: "OK", nagiosWarning: "WARNING", nagiosCritical: "CRITICAL", nagiosUnknown: "UNKNOWN"}[status]
	summary := fmt.Sprintf("%d of %d targets serve their order's current certificate", len(reports)-len(bad), len(reports))
	if len(bad) > 0 {
		summary += ": " + strings.Join(bad, ", ")
	}
	line := "DEPLOYED " + words + " - " + summary
	if len(perf) > 0 {
		line += " | " + strings.Join(perf, " ")
	}
	return status, line
}
