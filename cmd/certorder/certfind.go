package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/server/web"
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
	if errors.Is(err, client.ErrPrivateKey) {
		return nil, usageError("%s: --cert %s holds a private key, not a certificate; give the certificate (e.g. fullchain.pem or cert.pem)", cmd, file)
	}
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
	if d := issuedOn(cur); d != "" {
		on = " on " + d
	}
	if cur.SerialNumber == "" {
		fmt.Fprintf(e.stderr, "this certificate was replaced by a reissue of order %d; the order's next certificate awaits issuance (status %s)\n",
			o.OrderID, printable.String(o.Status))
	} else {
		fmt.Fprintf(e.stderr, "this certificate was replaced by a reissue%s; the order's current certificate is serial %s (valid till %s)\n",
			printable.String(on), printable.String(cur.SerialNumber), printable.String(cur.ValidTill.Raw))
	}
	return check.OrderID, nil
}

// issuedOn is the day a certificate was issued, YYYY-MM-DD: its
// date_issued, else its valid_from; "" when neither is stated.
func issuedOn(cert client.Certificate) string {
	if d := cert.DateIssued.Raw; len(d) >= len(certorder.DateLayout) {
		return d[:len(certorder.DateLayout)]
	}
	return cert.ValidFrom.Raw
}

// followChain follows the renewal chain from order id as current does
// (with its errors, and so its exit codes) and, when the order was
// renewed, says where the chain leads.
func (e *env) followChain(ctx context.Context, c *client.Client, id int64, asJSON bool) error {
	cur, err := c.Current(ctx, id)
	if err != nil || len(cur.Chain) < 2 || asJSON {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "Current order: %d (renewal chain %s)\n", cur.Order.OrderID, chainText(cur.Chain))
	return err
}

// maxBadLines is how many of --from's bad lines admin order find names;
// the others are counted, not kept (a file of bad lines is any size).
const maxBadLines = 10

// readFindFile reads admin order find's --from file, one serial or
// thumbprint a line, into add. A bad line anywhere stops it before any
// look-up, with the first maxBadLines named and the rest counted; a file
// with nothing to look up says so.
func (e *env) readFindFile(name string, add func(string) error) error {
	r, err := e.openInput(name)
	if err != nil {
		return err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	var bad []string
	n, nBad, queries := 0, 0, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := add(line); err != nil {
			if nBad++; len(bad) < maxBadLines {
				bad = append(bad, fmt.Sprintf("line %d: %v", n, err))
			}
			continue
		}
		queries++
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("order find: %s: line %d is over %d KiB: not a serial number or thumbprint; nothing looked up",
			name, n+1, bufio.MaxScanTokenSize>>10)
	case err != nil:
		return fmt.Errorf("order find: reading %s: %w", name, err)
	case nBad > maxBadLines:
		bad = append(bad, fmt.Sprintf("(and %d more bad lines)", nBad-maxBadLines))
		fallthrough
	case nBad > 0:
		return fmt.Errorf("order find: %s: nothing looked up:\n%s", name, strings.Join(bad, "\n"))
	case queries == 0:
		return fmt.Errorf("order find: %s has no serial number or thumbprint to look up: its %d line(s) are blank or # comments", name, n)
	}
	return nil
}

// parseSerialArg is the one rule for a serial number given on the command
// line: certorder.ParseSerial (hexadecimal in any case, colons, spaces and
// leading zeros ignored), after a leading 0x or 0X, as openssl x509 -serial
// and many tools print it. The API's CertificateCheck stays as CertCentral
// reads it (no 0x): a client sends what it was given by a program, a person
// types what a tool printed.
func parseSerialArg(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	return certorder.ParseSerial(s)
}

// findBatch is how many serials and thumbprints admin order find asks the
// store for in one query.
const findBatch = 5000

// certQuery is one serial number or thumbprint admin order find looks up:
// as given, and its look-up forms ("" for a form it cannot be). A line of
// --from that is 40 hex digits is both: a thumbprint, or a serial of 20
// octets.
type certQuery struct {
	given, serial, thumbprint string
}

// orderFind is "admin order find": the order, member, currency and order
// status of each certificate given, one indexed query per findBatch.
func (e *env) orderFind(fs *flag.FlagSet) adminFunc {
	var queries []certQuery
	add := func(what string, serial, thumbprint bool) func(string) error {
		return func(s string) error {
			q := certQuery{given: strings.TrimSpace(s)}
			var ok1, ok2 bool
			if serial {
				q.serial, ok1 = parseSerialArg(q.given)
			}
			if thumbprint {
				q.thumbprint, ok2 = certorder.ParseThumbprint(q.given)
			}
			if !ok1 {
				q.serial = ""
			}
			if !ok2 {
				q.thumbprint = ""
			}
			if !ok1 && !ok2 {
				return fmt.Errorf("%q is not a %s", certorder.Cut(s, 100), what)
			}
			queries = append(queries, q)
			return nil
		}
	}
	fs.Func("serial", "a certificate's serial number, hexadecimal (a leading 0x, colons, spaces and case ignored); repeatable", add("serial number", true, false))
	fs.Func("thumbprint", "a certificate's SHA-1 thumbprint, 40 hex digits; repeatable", add("thumbprint", false, true))
	from := fs.String("from", "", "read serial numbers or thumbprints from this file (- for stdin), one a line, as a CA's revocation notice lists them; blank lines and # comments are skipped")
	asJSON := fs.Bool("json", false, "print one JSON object a line")
	asCSV := fs.Bool("csv", false, "print CSV with a header line")
	return role(func(ctx context.Context, store storekit.CertificateFinder, _ []string) error {
		if *asJSON && *asCSV {
			return usageError("order find: give --json or --csv, not both")
		}
		if *from != "" {
			if err := e.readFindFile(*from, add("serial number or thumbprint", true, true)); err != nil {
				return err
			}
		}
		if len(queries) == 0 {
			return usageError("order find: give --serial, --thumbprint or --from FILE")
		}
		out := newFindWriter(e.stdout, *asJSON, *asCSV)
		var found, missing int
		members := map[string]bool{}
		for batch := range slices.Chunk(queries, findBatch) {
			var q certorder.CertificateQuery
			for _, c := range batch {
				if c.serial != "" {
					q.Serials = append(q.Serials, c.serial)
				}
				if c.thumbprint != "" {
					q.Thumbprints = append(q.Thumbprints, c.thumbprint)
				}
			}
			ms, err := store.FindCertificates(ctx, q)
			if err != nil {
				return fmt.Errorf("order find: %w", err)
			}
			bySerial, byThumbprint := map[string][]int{}, map[string][]int{}
			for i, m := range ms {
				k := certorder.SerialKey(m.SerialNumber)
				bySerial[k] = append(bySerial[k], i)
				k = certorder.HexKey(m.Thumbprint)
				byThumbprint[k] = append(byThumbprint[k], i)
			}
			for _, c := range batch {
				at := slices.Concat(bySerial[c.serial], byThumbprint[c.thumbprint])
				slices.Sort(at)
				at = slices.Compact(at) // a 40-digit line found both ways is one certificate
				if len(at) == 0 {
					missing++
					out.missing(c.given)
				}
				for _, i := range at {
					found++
					members[ms[i].Member] = true
					out.match(c.given, &ms[i])
				}
			}
		}
		if err := out.flush(); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "looked up %d: %d certificate(s) found, of %d member(s); %d not found\n",
			len(queries), found, len(members), missing)
		return nil
	})
}

// findWriter prints admin order find's rows: a table, JSON lines or CSV.
type findWriter struct {
	table *tabwriter.Writer
	json  *json.Encoder
	csv   *csv.Writer
}

func newFindWriter(w io.Writer, asJSON, asCSV bool) *findWriter {
	switch {
	case asJSON:
		return &findWriter{json: json.NewEncoder(w)}
	case asCSV:
		f := &findWriter{csv: csv.NewWriter(w)}
		f.csv.Write([]string{"query", "found", "order_id", "member", "certificate_id", "serial_number", "is_current", "order_status"})
		return f
	}
	f := &findWriter{table: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	fmt.Fprintln(f.table, "QUERY\tORDER\tMEMBER\tCERTIFICATE\tSERIAL\tCURRENT\tORDER STATUS")
	return f
}

// findRecord is a row of --json.
type findRecord struct {
	Query         string `json:"query"`
	Found         bool   `json:"found"`
	OrderID       int64  `json:"order_id,omitempty"`
	Member        string `json:"member,omitempty"`
	CertificateID int64  `json:"certificate_id,omitempty"`
	SerialNumber  string `json:"serial_number,omitempty"`
	IsCurrent     bool   `json:"is_current,omitempty"`
	OrderStatus   string `json:"order_status,omitempty"`
}

func (f *findWriter) match(query string, m *certorder.CertificateMatch) {
	switch {
	case f.json != nil:
		f.json.Encode(findRecord{Query: query, Found: true, OrderID: m.OrderID, Member: m.Member, CertificateID: m.ID,
			SerialNumber: m.SerialNumber, IsCurrent: m.Current, OrderStatus: m.OrderStatus})
	case f.csv != nil:
		f.csv.Write([]string{web.CSVCell(query), "true", strconv.FormatInt(m.OrderID, 10), web.CSVCell(m.Member),
			strconv.FormatInt(m.ID, 10), web.CSVCell(m.SerialNumber), strconv.FormatBool(m.Current), web.CSVCell(m.OrderStatus)})
	default:
		current := "no (reissued)"
		if m.Current {
			current = "yes"
		}
		fmt.Fprintf(f.table, "%s\t%d\t%s\t%d\t%s\t%s\t%s\n", printable.String(query), m.OrderID, printable.String(m.Member), m.ID,
			printable.String(m.SerialNumber), current, printable.String(m.OrderStatus))
	}
}

func (f *findWriter) missing(query string) {
	switch {
	case f.json != nil:
		f.json.Encode(findRecord{Query: query})
	case f.csv != nil:
		f.csv.Write([]string{web.CSVCell(query), "false", "", "", "", "", "", ""})
	default:
		fmt.Fprintf(f.table, "%s\t-\t-\t-\t-\t-\tnot found\n", printable.String(query))
	}
}

func (f *findWriter) flush() error {
	switch {
	case f.csv != nil:
		f.csv.Flush()
		return f.csv.Error()
	case f.table != nil:
		return f.table.Flush()
	}
	return nil
}
