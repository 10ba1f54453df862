package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/certorder/certorder/client"
)

// Exit codes of the member commands, beside exitFailure and exitUsage.
const (
	exitCredentials = 3 // credentials rejected
	exitNoSuchOrder = 4 // no such order
	exitNotRenewed  = 5 // renew-check: the order has not been renewed
	exitUnreachable = 6 // network, server or rate-limit trouble: try again later
)

// member runs auth, info, renew-check and current.
func (e *env) member(ctx context.Context, cmd string, args []string) error {
	argsUsage := "ID [flags]"
	if cmd == "auth" {
		argsUsage = "[flags]"
	}
	fs := e.newFlags(cmd, argsUsage)
	endpoint := fs.String("url", "", "the endpoint, e.g. https://host/api/digicert/ (env CERTORDER_URL)")
	name := fs.String("access-name", "", "your member ID (env CERTORDER_ACCESS_NAME)")
	key := fs.String("access-key", "",
		"your API key (env CERTORDER_ACCESS_KEY); a flag shows in ps and shell history, prefer the file or the variable")
	keyFile := fs.String("access-key-file", "", "read the API key from this file")
	asJSON := fs.Bool("json", false, "print the service's answer unchanged")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long, retries included")
	var idOnly *bool
	if cmd == "current" {
		idOnly = fs.Bool("id", false, "print only the current order number")
	}
	want := 1
	if cmd == "auth" {
		want = 0
	}
	pos, err := parse(fs, args, want)
	if err != nil {
		return err
	}
	if err := e.applyEnv(fs, map[string]string{"url": "CERTORDER_URL", "access-name": "CERTORDER_ACCESS_NAME",
		"access-key": "CERTORDER_ACCESS_KEY"}); err != nil {
		return err
	}
	var id int64
	if want == 1 {
		if id, err = orderIDArg(pos[0]); err != nil {
			return err
		}
	}
	if *keyFile != "" {
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			return usageError("%s: reading the key file: %v", cmd, err)
		}
		*key = strings.TrimSpace(string(b))
	}
	if *endpoint == "" || *name == "" || *key == "" {
		return usageError("%s: need --url, --access-name and an access key (flags or CERTORDER_URL, CERTORDER_ACCESS_NAME, CERTORDER_ACCESS_KEY)", cmd)
	}
	c, err := client.New(*endpoint, *name, *key, client.WithTimeout(*timeout))
	if err != nil {
		return usageError("%v", err)
	}

	switch cmd {
	case "auth":
		err = e.authCmd(ctx, c, *asJSON)
	case "info":
		err = e.infoCmd(ctx, c, id, *asJSON)
	case "renew-check":
		err = e.renewCheckCmd(ctx, c, id, *asJSON)
	case "current":
		err = e.currentCmd(ctx, c, id, *asJSON, *idOnly)
	}
	return memberExit(err)
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

func (e *env) infoCmd(ctx context.Context, c *client.Client, id int64, asJSON bool) error {
	o, err := c.OrderInfo(ctx, id)
	if err != nil {
		return err
	}
	if asJSON {
		return e.printRaw(o.Raw)
	}
	return e.printOrder(o, nil)
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

func (e *env) currentCmd(ctx context.Context, c *client.Client, id int64, asJSON, idOnly bool) error {
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
	return e.printOrder(cur.Order, cur.Chain)
}

func (e *env) printRaw(raw []byte) error {
	_, err := fmt.Fprintln(e.stdout, strings.TrimSpace(string(raw)))
	return err
}

// printOrder is the readable summary of an order, with its renewal chain if known.
func (e *env) printOrder(o *client.Order, chain []int64) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if len(chain) > 0 {
		ids := make([]string, len(chain))
		for i, id := range chain {
			ids[i] = strconv.FormatInt(id, 10)
		}
		fmt.Fprintf(tw, "Renewal chain:\t%s\n", strings.Join(ids, " -> "))
		fmt.Fprintf(tw, "Current order:\t%d\n", o.OrderID)
	} else {
		fmt.Fprintf(tw, "Order:\t%d\n", o.OrderID)
	}
	cert := o.Certificate
	fmt.Fprintf(tw, "Common name:\t%s\n", cert.CommonName)
	if len(cert.DNSNames) > 0 {
		fmt.Fprintf(tw, "DNS names:\t%s\n", strings.Join(cert.DNSNames, ", "))
	}
	fmt.Fprintf(tw, "Product:\t%s\n", o.Product.Name)
	fmt.Fprintf(tw, "Status:\t%s (certificate %s)\n", o.Status, cert.Status)
	days := ""
	if cert.DaysRemaining.Valid {
		days = fmt.Sprintf(" (%d days remaining)", cert.DaysRemaining.Value)
		if cert.DaysRemaining.Value < 0 {
			days = fmt.Sprintf(" (expired %d days ago)", -cert.DaysRemaining.Value)
		}
	}
	fmt.Fprintf(tw, "Valid till:\t%s%s\n", cert.ValidTill.Raw, days)
	renewed := "not renewed"
	if o.IsRenewed {
		renewed = fmt.Sprintf("renewed by order %d", o.WasRenewedByOrderID.Value)
	}
	fmt.Fprintf(tw, "Renewal:\t%s\n", renewed)
	return tw.Flush()
}

// memberExit gives a client error its documented exit code.
func memberExit(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *client.APIError
	code := exitFailure
	switch {
	case errors.Is(err, client.ErrCredentialsRejected):
		code = exitCredentials
	case errors.Is(err, client.ErrNotRenewed):
		code = exitNotRenewed
	case errors.Is(err, client.ErrNoSuchOrder):
		code = exitNoSuchOrder
	case errors.Is(err, client.ErrRateLimited), errors.Is(err, client.ErrUnavailable):
		code = exitUnreachable
	case errors.As(err, &apiErr):
		if apiErr.Status >= 500 {
			code = exitUnreachable
		}
	default: // not an answer of the service: network, HTTP or time-out trouble
		code = exitUnreachable
	}
	return &exitErr{code: code, err: err}
}
