package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/certorder/certorder/client"
)

// certArg is the certificate a member command starts from (--cert FILE).
type certArg struct {
	file string
	cert *x509.Certificate
}

// readCertArg reads the leaf of a certificate file: PEM (the first
// certificate, the leaf of a chain file), or DER. A file that cannot be
// read or holds no certificate is a usage error.
func readCertArg(cmd, file string) (*certArg, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, usageError("%s: --cert: %v", cmd, err)
	}
	cert, err := client.ParseCertificate(b)
	if err != nil {
		return nil, usageError("%s: --cert %s: %v", cmd, file, err)
	}
	return &certArg{file: file, cert: cert}, nil
}

// certOrder asks CertificateCheck for the order of a certificate, by its
// serial number. One that is no longer the order's current certificate is
// said on stderr, with the current one (one more call: OrderInfo).
func (e *env) certOrder(ctx context.Context, c *client.Client, a *certArg) (int64, error) {
	key := client.KeyOf(a.cert)
	check, err := c.CertificateCheck(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("certificate %s (serial %s): %w", a.file, strings.ToUpper(key.SerialNumber), err)
	}
	if check.IsCurrent {
		return check.OrderID, nil
	}
	o, err := c.OrderInfo(ctx, check.OrderID)
	if err != nil {
		return check.OrderID, err
	}
	cur := o.Certificate
	on := ""
	if d := cur.DateIssued.Raw; len(d) >= len("2006-01-02") {
		on = " on " + d[:len("2006-01-02")]
	} else if d := cur.ValidFrom.Raw; d != "" {
		on = " on " + d
	}
	if cur.SerialNumber == "" {
		fmt.Fprintf(e.stderr, "this certificate was replaced by a reissue of order %d; the order's next certificate awaits issuance (status %s)\n",
			o.OrderID, printable(o.Status))
	} else {
		fmt.Fprintf(e.stderr, "this certificate was replaced by a reissue%s; the order's current certificate is serial %s (valid till %s)\n",
			printable(on), printable(cur.SerialNumber), printable(cur.ValidTill.Raw))
	}
	return check.OrderID, nil
}

// followChain follows the renewal chain from order id as current does
// (with its errors, and so its exit codes) and, when the order was
// renewed, says where the chain leads.
func (e *env) followChain(ctx context.Context, c *client.Client, id int64, asJSON bool) error {
	cur, err := c.Current(ctx, id)
	if err != nil || len(cur.Chain) < 2 || asJSON {
		return err
	}
	ids := make([]string, len(cur.Chain))
	for i, n := range cur.Chain {
		ids[i] = strconv.FormatInt(n, 10)
	}
	_, err = fmt.Fprintf(e.stdout, "Current order: %d (renewal chain %s)\n", cur.Order.OrderID, strings.Join(ids, " -> "))
	return err
}
