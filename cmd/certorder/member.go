package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/acmeurl"
	"github.com/certorder/certorder/internal/printable"
)

// member runs auth, info, renew-check and current (acme-url is in acmeurl.go).
func (e *env) member(ctx context.Context, cmd string, args []string) error {
	argsUsage := "ID [flags]"
	switch cmd {
	case "auth":
		argsUsage = "[flags]"
	case "info", "current":
		argsUsage = "ID|--cert FILE [flags]"
	}
	fs := e.newFlags(cmd, argsUsage)
	creds := memberFlags(fs)
	asJSON := fs.Bool("json", false, "print the service's answer unchanged")
	var idOnly *bool
	if cmd == "current" {
		idOnly = fs.Bool("id", false, "print only the current order number")
	}
	var windows certorder.Windows
	var certFile *string
	if cmd == "info" || cmd == "current" {
		wopts := windowOptions(&windows)
		defineOptions(fs, wopts)
		creds.opts = append(creds.opts, wopts...)
		certFile = fs.String("cert", "", "start from the order of this certificate instead of ID: a PEM, DER or chain file (its first certificate)")
	}
	lo, hi := 1, 1
	switch {
	case cmd == "auth":
		lo, hi = 0, 0
	case certFile != nil:
		lo = 0
	}
	pos, err := parseRange(fs, args, lo, hi)
	if err != nil {
		return err
	}
	var id int64
	var cert *certArg
	switch {
	case certFile != nil && *certFile != "" && len(pos) > 0:
		return usageError("%s: give an order ID or --cert, not both", cmd)
	case certFile != nil && *certFile != "":
		if cert, err = readCertArg(cmd, *certFile); err != nil {
			return err
		}
	case hi == 1 && len(pos) == 0:
		fs.Usage()
		return usageError("%s: want an order ID or --cert FILE", cmd)
	case hi == 1:
		if id, err = orderIDArg(pos[0]); err != nil {
			return err
		}
	}
	c, err := creds.client(e, fs, cmd)
	if err != nil {
		return err
	}
	if cmd == "info" || cmd == "current" {
		if err := checkWindows(cmd, windows); err != nil {
			return err
		}
	}

	if cert != nil {
		if id, err = e.certOrder(ctx, c, cert); err != nil {
			return memberExit(err, cmd, id, creds.endpoint, creds.name)
		}
	}
	switch cmd {
	case "auth":
		err = e.authCmd(ctx, c, *asJSON)
	case "info":
		err = e.infoCmd(ctx, c, id, *asJSON, windows)
		if err == nil && cert != nil {
			err = e.followChain(ctx, c, id, *asJSON) // as current does: the same exit codes
		}
	case "renew-check":
		err = e.renewCheckCmd(ctx, c, id, *asJSON)
	case "current":
		err = e.currentCmd(ctx, c, id, *asJSON, *idOnly, windows)
	}
	return memberExit(err, cmd, id, creds.endpoint, creds.name)
}

// memberCreds are the flags every member command shares: where the
// service is, who is asking, and how long to wait.
type memberCreds struct {
	endpoint, name, key, keyFile string
	timeout                      time.Duration
	opts                         []option
}

func memberFlags(fs *flag.FlagSet) *memberCreds {
	m := &memberCreds{}
	m.opts = []option{
		{"url", "CERTORDER_URL", "the endpoint, e.g. https://host/api/digicert/", stringVar(&m.endpoint, "")},
		{"access-name", "CERTORDER_ACCESS_NAME", "your member ID", stringVar(&m.name, "")},
		{"access-key", "CERTORDER_ACCESS_KEY", "your API key; a flag shows in ps and shell history, prefer the file or the variable", stringVar(&m.key, "")},
		{"access-key-file", "", "read the API key from this file", stringVar(&m.keyFile, "")},
		{"timeout", "", "give up after this long, retries included", durationVar(&m.timeout, 30*time.Second)},
	}
	defineOptions(fs, m.opts)
	return m
}

// client applies the CERTORDER_* variables to the flags not given, reads
// the key file and makes the client; what is missing is a usage error.
func (m *memberCreds) client(e *env, fs *flag.FlagSet, cmd string) (*client.Client, error) {
	if err := e.applyEnv(fs, m.opts); err != nil {
		return nil, err
	}
	if m.keyFile != "" {
		var err error
		if m.key, err = e.readKeyFile(cmd, "access-key-file", m.keyFile); err != nil {
			return nil, err
		}
	}
	if u, err := url.Parse(m.endpoint); err == nil && u.Scheme == "http" && !acmeurl.Loopback(u.Hostname()) {
		fmt.Fprintf(e.stderr, "warning: %s is plain http: the access key crosses the network unencrypted; use https\n", u.Redacted())
	}
	var missing []string
	for _, f := range []struct{ value, what string }{
		{m.endpoint, "--url (or CERTORDER_URL)"},
		{m.name, "--access-name (or CERTORDER_ACCESS_NAME)"},
		{m.key, "an access key (--access-key-file, CERTORDER_ACCESS_KEY or --access-key)"},
	} {
		if f.value == "" {
			missing = append(missing, f.what)
		}
	}
	if len(missing) > 0 {
		return nil, usageError("%s: missing %s", cmd, strings.Join(missing, ", "))
	}
	c, err := client.New(m.endpoint, m.name, m.key, client.WithTimeout(m.timeout))
	if err != nil {
		return nil, usageError("%v", err)
	}
	return c, nil
}

func (e *env) authCmd(ctx context.Context, c *client.Client, asJSON bool) error {
	raw, err := c.Call(ctx, "Auth", 0)
	if err != nil {
		return err
	}
	if asJSON {
		return e.printRaw(raw)
	}
	fmt.Fprintln(e.stdout, "credentials accepted")
	return nil
}

func (e *env) infoCmd(ctx context.Context, c *client.Client, id int64, asJSON bool, w certorder.Windows) error {
	o, err := c.OrderInfo(ctx, id)
	if err != nil {
		return err
	}
	if asJSON {
		return e.printRaw(o.Raw)
	}
	// The next step depends on whether the renewal is issued: one more call.
	var renewal *client.Order
	if o.IsRenewed {
		renewal, err = c.OrderInfo(ctx, o.WasRenewedByOrderID.Value)
		if errors.Is(err, client.ErrNoSuchOrder) {
			renewal, err = nil, nil // not stored (yet): a renewal not issued
		}
		if err != nil {
			return err
		}
	}
	next := w.Next(o.Lifecycle(renewal), time.Now())
	return e.printOrder(o, nil, "", &next)
}

func (e *env) renewCheckCmd(ctx context.Context, c *client.Client, id int64, asJSON bool) error {
	r, err := c.RenewCheck(ctx, id)
	if err != nil {
		return err
	}
	if asJSON {
		return e.printRaw(r.Raw)
	}
	fmt.Fprintf(e.stdout, "order %d was renewed by order %d\n", id, r.RenewedOrderID.Value)
	return nil
}

func (e *env) currentCmd(ctx context.Context, c *client.Client, id int64, asJSON, idOnly bool, w certorder.Windows) error {
	cur, err := c.Current(ctx, id)
	switch {
	case err != nil:
		return err
	case idOnly:
		fmt.Fprintln(e.stdout, cur.Order.OrderID)
		return nil
	case asJSON:
		return e.printRaw(cur.Order.Raw)
	}
	next := w.Next(cur.Order.Lifecycle(nil), time.Now())
	return e.printOrder(cur.Order, cur.Chain, "", &next)
}

func (e *env) printRaw(raw []byte) error {
	_, err := fmt.Fprintln(e.stdout, strings.TrimSpace(string(raw)))
	return err
}

// printOrder is the readable summary of an order, with its renewal chain if
// known, when member is not empty the member who owns it, and its next step.
func (e *env) printOrder(o *client.Order, chain []int64, member string, next *certorder.NextStep) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if member != "" {
		fmt.Fprintf(tw, "Member:\t%s\n", printable.String(member))
	}
	if len(chain) > 0 {
		fmt.Fprintf(tw, "Renewal chain:\t%s\n", chainText(chain))
		fmt.Fprintf(tw, "Current order:\t%d\n", o.OrderID)
	} else {
		fmt.Fprintf(tw, "Order:\t%d\n", o.OrderID)
	}
	cert := o.Certificate
	fmt.Fprintf(tw, "Common name:\t%s\n", printable.String(cert.CommonName))
	if len(cert.DNSNames) > 0 {
		fmt.Fprintf(tw, "DNS names:\t%s\n", strings.Join(printable.Strings(cert.DNSNames), ", "))
	}
	if o.Product.Name != "" {
		fmt.Fprintf(tw, "Product:\t%s\n", printable.String(o.Product.Name))
	}
	if cert.Status != "" {
		fmt.Fprintf(tw, "Status:\t%s (certificate %s)\n", printable.String(o.Status), printable.String(cert.Status))
	} else {
		fmt.Fprintf(tw, "Status:\t%s\n", printable.String(o.Status))
	}
	switch {
	case o.Issued():
		days := ""
		if cert.DaysRemaining.Valid {
			days = fmt.Sprintf(" (%d days remaining)", cert.DaysRemaining.Value)
			if cert.DaysRemaining.Value < 0 {
				days = fmt.Sprintf(" (expired %d days ago)", -cert.DaysRemaining.Value)
			}
		}
		fmt.Fprintf(tw, "Valid till:\t%s%s (the certificate's end)\n", printable.String(cert.ValidTill.Raw), days)
	case o.Ended():
		fmt.Fprintf(tw, "Valid till:\tnever issued (%s)\n", printable.String(o.Status))
	default:
		fmt.Fprintf(tw, "Valid till:\tnot issued yet (awaiting issuance)\n")
	}
	if till := o.OrderValidTill.Raw; till != "" {
		fmt.Fprintf(tw, "Plan ends:\t%s%s (the contract's end)\n", printable.String(till), daysLeft(till))
	} else {
		fmt.Fprintf(tw, "Plan ends:\tnot stated\n")
	}
	renewed := "not renewed"
	if o.IsRenewed {
		renewed = fmt.Sprintf("renewed by order %d", o.WasRenewedByOrderID.Value)
	}
	fmt.Fprintf(tw, "Renewal:\t%s\n", renewed)
	if next != nil {
		fmt.Fprintf(tw, "Next step:\t%s\n", stepText(*next))
		if advice := stepAdvice[next.Step]; advice != "" {
			fmt.Fprintf(tw, "\t%s\n", advice)
		}
	}
	return tw.Flush()
}

// chainText is a renewal chain as the commands write it: "A -> B -> C".
func chainText(chain []int64) string {
	ids := make([]string, len(chain))
	for i, id := range chain {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(ids, " -> ")
}

// daysLeft says how far a date is from today, UTC.
func daysLeft(date string) string {
	if _, err := time.Parse(certorder.DateLayout, date); err != nil {
		return ""
	}
	switch d := certorder.DaysRemaining(date, time.Now()); {
	case d < 0:
		return fmt.Sprintf(" (%d days ago)", -d)
	default:
		return fmt.Sprintf(" (%d days remaining)", d)
	}
}

// stepText is a next step in a line: its name, then its date or order
// ("reissue by 2026-09-10", "renewed as 21000106"), so that a script can
// read the first word.
func stepText(n certorder.NextStep) string {
	s := string(n.Step)
	switch n.Step {
	case certorder.StepReissue, certorder.StepRenew:
		s += " by " + n.Due
	case certorder.StepIssueRenewal:
		s += fmt.Sprintf(" %d by %s", n.Renewal, n.Due)
	case certorder.StepRenewed:
		s += fmt.Sprintf(" as %d", n.Renewal)
	case certorder.StepNone:
		switch {
		case n.Missing == "certificate.valid_till":
			s += " (awaiting issuance by the ACME client)"
		case n.Renewal != 0:
			s += fmt.Sprintf(" (renewal %d awaits issuance)", n.Renewal)
		case n.Missing != "" && n.Due != "":
			s += " (the certificate ends " + n.Due + "; " + n.Missing + " is not stated: reissue or renew)"
		case n.Missing != "":
			s += " (" + n.Missing + " is not stated)"
		}
	}
	if n.Due != "" && certorder.DaysRemaining(n.Due, time.Now()) < 0 {
		s += " (overdue)"
	}
	return s
}

// stepAdvice says what each step asks of the member.
var stepAdvice = map[certorder.Step]string{
	certorder.StepReissue:      "your ACME client reissues on the same order number: nothing to buy, the ACME URL stays",
	certorder.StepRenew:        "the plan ends: renew the contract (a new order number), then follow it with certorder acme-url",
	certorder.StepIssueRenewal: "the renewal has no certificate yet: run your ACME client for it (certorder acme-url names its URL)",
	certorder.StepRenewed:      "use the renewal: certorder current or acme-url follows it",
}

// readKeyFile reads a secret from the file a flag names: a file that cannot
// be read, or holds nothing, is a usage error naming the flag; a file other
// users may read is warned about (the secret is readable by them).
func (e *env) readKeyFile(cmd, flagName, path string) (string, error) {
	key, err := e.readSecretFile(flagName, path, "key file")
	if err != nil {
		return "", usageError("%s: %v", cmd, err)
	}
	return key, nil
}

// readSecretFile is readKeyFile's reading, for a file that what names (the
// key file, the password file), its error naming the flag alone.
func (e *env) readSecretFile(flagName, path, what string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %v", flagName, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o004 != 0 {
		fmt.Fprintf(e.stderr, "certorder: warning: the %s %s is readable by every user (mode %04o): chmod o-r %s\n",
			what, path, fi.Mode().Perm(), shellQuote(path))
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return "", fmt.Errorf("--%s %s: the %s is empty", flagName, path, what)
	}
	return key, nil
}
