package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/deploytarget"
	"github.com/certorder/certorder/internal/inorder"
	"github.com/certorder/certorder/internal/printable"
)

// maxTargets bounds the targets of one certorder deployed.
const maxTargets = 1000

const deployedHelp = `does each server (HOST[:PORT]) serve its order's current certificate?

Reads the certificate each target presents (port 443 by default, 25 with
--starttls smtp; an IPv6 address in brackets), without trusting it, looks it
up by its serial number (CertificateCheck) and follows its order's renewals as
current does. One line per target, HOST:PORT: STATE: ..., the state one of
current, replaced, renewed, ending, unknown, unreachable (docs/MEMBERS.md).

Exit codes, per target and overall the highest: 0 current; 8 replaced by a
reissue, of a renewed order, or ending within --warn-days; 6 unreachable (or
the service is); 4 not a certificate of your orders; 3 credentials rejected;
2 wrong arguments.`

// deployed is "certorder deployed TARGET...": whether each server serves
// its order's current certificate. A line per target; the exit code is
// the highest of the targets'.
func (e *env) deployed(ctx context.Context, args []string) error {
	const cmd = "deployed"
	fs := e.commandFlags(cmd, "TARGET... [flags]", deployedHelp)
	creds := memberFlags(fs)
	var windows certorder.Windows
	wopts := windowOptions(&windows)
	defineOptions(fs, wopts)
	creds.opts = append(creds.opts, wopts...)
	serverName := fs.String("servername", "", "the name asked for (SNI) and checked against the certificate; default each target's host")
	starttls := fs.String("starttls", "", "ask for TLS inside this protocol first: "+strings.Join(starttlsProtocols, ", ")+" (EHLO, STARTTLS; the port's default becomes 25)")
	connectTimeout := fs.Duration("connect-timeout", 10*time.Second, "give up on a target after this long: connection, STARTTLS and TLS handshake")
	warnDays := fs.Int("warn-days", 0, "a current certificate ending within this many days is something to do (exit 8); "+
		"default each certificate's reissue window (--reissue-window-days, or a third of its life if shorter)")
	asJSON := fs.Bool("json", false, "print one JSON object per target per line")
	quiet := fs.Bool("quiet", false, "print only the targets that are not fine: nothing when all are")
	nagios := fs.Bool("nagios", false, "print one line for Nagios, Icinga or Sensu, and exit 0 OK, 1 WARNING, 2 CRITICAL or 3 UNKNOWN")
	pos, err := parseRange(fs, args, 0, maxTargets)
	if err != nil {
		return err
	}
	// A plugin runner reads stdout and the plugin's codes, whatever went wrong.
	fail := func(err error) error {
		if *nagios && exitCode(err) == exitUsage {
			fmt.Fprintf(e.stdout, "DEPLOYED UNKNOWN - %s\n", printable.Cut(err.Error(), maxErrorLine))
			return &exitErr{code: nagiosUnknown, err: err}
		}
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return fail(usageError("%s: want one or more targets, HOST[:PORT] (port %d by default)", cmd, deployPort(*starttls)))
	}
	switch {
	case *starttls != "" && !slices.Contains(starttlsProtocols, *starttls):
		return fail(usageError("%s: --starttls %q is not one of %s", cmd, *starttls, strings.Join(starttlsProtocols, ", ")))
	case *serverName != "" && !deploytarget.HostName(*serverName):
		return fail(usageError("%s: --servername %q is not a host name", cmd, *serverName))
	case *connectTimeout <= 0:
		return fail(usageError("%s: --connect-timeout must be positive", cmd))
	case *warnDays < 0:
		return fail(usageError("%s: --warn-days must not be negative", cmd))
	case *nagios && (*asJSON || *quiet):
		return fail(usageError("%s: --nagios prints its own line: give it without --json and --quiet", cmd))
	}
	targets := make([]deploytarget.Target, len(pos))
	var bad []string
	for i, p := range pos {
		if targets[i], err = deploytarget.Parse(p, deployPort(*starttls)); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		return fail(usageError("%s: %s", cmd, strings.Join(bad, "; ")))
	}
	c, err := creds.client(e, fs, cmd)
	if err != nil {
		return fail(err)
	}
	if err := checkWindows(cmd, windows); err != nil {
		return fail(err)
	}
	d := &deployCheck{c: c, prober: prober{timeout: *connectTimeout, starttls: *starttls}, windows: windows,
		warnDays: -1, serverName: *serverName, name: creds.name, endpoint: creds.endpoint, now: time.Now()}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "warn-days" {
			d.warnDays = *warnDays
		}
	})

	var reports []*deployReport
	out := json.NewEncoder(e.stdout)
	inorder.Run(func(emit func(deploytarget.Target) bool) {
		for _, t := range targets {
			if !emit(t) {
				return
			}
		}
	}, func(t deploytarget.Target) *deployReport { return d.check(ctx, t) }, func(r *deployReport) bool {
		reports = append(reports, r)
		if r.warning != "" {
			fmt.Fprintf(e.stderr, "certorder: warning: %s\n", r.warning)
		}
		switch {
		case *nagios, *quiet && r.code == 0:
		case *asJSON:
			out.Encode(r)
		default:
			fmt.Fprintln(e.stdout, r.line())
		}
		return true
	})
	code := 0
	for _, r := range reports {
		code = max(code, r.code)
	}
	if *nagios {
		status, line := nagiosLine(reports)
		fmt.Fprintln(e.stdout, line)
		code = status
	}
	if code == 0 {
		return nil
	}
	return &exitErr{code: code, err: errSaid}
}

// deployPort is a target's port when it names none.
func deployPort(starttls string) int {
	if starttls == "smtp" {
		return 25
	}
	return 443
}

// deployCheck is what the targets of one certorder deployed share.
type deployCheck struct {
	c              *client.Client
	prober         prober
	windows        certorder.Windows
	warnDays       int    // -1: each certificate's reissue window
	serverName     string // "": each target's host
	name, endpoint string // the member and the service, for memberExit's words
	now            time.Time
	refused        atomic.Pointer[error] // credentials rejected: the service is not asked again
}

// check reads a target's certificate and asks the service about it.
func (d *deployCheck) check(ctx context.Context, t deploytarget.Target) *deployReport {
	r := &deployReport{Host: t.Host, Port: t.Port, ServerName: cmp.Or(d.serverName, t.Host), target: t}
	certs, err := d.prober.certificates(ctx, t, r.ServerName)
	if err != nil {
		return r.failed(stateUnreachable, exitUnreachable, err)
	}
	leaf := certs[0]
	if err := verifyChain(certs, r.ServerName); err != nil {
		r.warning = fmt.Sprintf("%s: the certificate does not verify against the system roots for %s: %s",
			r.where(), r.ServerName, printable.Cut(err.Error(), maxErrorLine))
	}
	r.served(leaf, d.now)
	r.warn = d.warnDays
	if r.warn < 0 {
		r.warn = d.windows.ReissueWindow(leaf.NotBefore.UTC().Format(certorder.DateLayout), leaf.NotAfter.UTC().Format(certorder.DateLayout))
	}
	if p := d.refused.Load(); p != nil {
		return d.lookupFailed(r, *p, 0)
	}
	check, err := d.c.CertificateCheck(ctx, client.KeyOf(leaf))
	if err != nil {
		return d.lookupFailed(r, err, 0) // the line names the serial
	}
	r.OrderID, r.IsCurrent = &check.OrderID, &check.IsCurrent
	o, renewal, chain, err := d.follow(ctx, check.OrderID)
	if err != nil {
		return d.lookupFailed(r, err, check.OrderID)
	}
	r.NewestOrderID = &chain[len(chain)-1]
	if s := o.Certificate.SerialNumber; s != "" {
		cs := serialForm(s)
		r.CurrentSerialNumber = &cs
	}
	r.judge(o, check.IsCurrent, chain, d.windows.Next(o.Lifecycle(renewal), d.now), d.warnDays >= 0)
	return r
}

// follow follows the renewal chain of the certificate's order id as
// current does, and returns the order, the order that renewed it (nil
// when none, or not stored) and the chain. A chain that ends canceled or
// rejected is no error here: the order's next step says what that means
// (a renewal canceled is none), and the chain ends before such a renewal,
// at the newest order that can have a certificate.
func (d *deployCheck) follow(ctx context.Context, id int64) (o, renewal *client.Order, chain []int64, err error) {
	var newest *client.Order
	cur, err := d.c.Current(ctx, id)
	var ended *client.EndedError
	switch {
	case errors.As(err, &ended):
		chain, newest = ended.Chain, ended.Order
	case err != nil:
		return nil, nil, nil, err
	default:
		chain, newest = cur.Chain, cur.Order
	}
	if len(chain) == 1 {
		return newest, nil, chain, nil
	}
	if o, err = d.c.OrderInfo(ctx, id); err != nil {
		return nil, nil, nil, err
	}
	renewal = newest
	if chain[1] != newest.OrderID {
		renewal, err = d.c.OrderInfo(ctx, chain[1])
		if errors.Is(err, client.ErrNoSuchOrder) {
			renewal, err = nil, nil // not stored (yet): a renewal not issued
		}
	}
	if ended != nil {
		chain = chain[:len(chain)-1]
	}
	return o, renewal, chain, err
}

// lookupFailed is a target whose certificate the service could not place:
// memberExit gives the exit code and the words. Once the credentials are
// rejected, no other target asks again (each would count towards the
// service's lockout).
func (d *deployCheck) lookupFailed(r *deployReport, err error, id int64) *deployReport {
	if errors.Is(err, client.ErrCredentialsRejected) {
		d.refused.CompareAndSwap(nil, &err)
	}
	var ex *exitErr
	errors.As(memberExit(err, "deployed", id, d.endpoint, d.name), &ex)
	return r.failed(stateUnknown, ex.code, ex.err)
}

// errSaid ends a command whose output already said what went wrong: main
// prints nothing more, and exits with the code.
var errSaid = errors.New("said on stdout")
