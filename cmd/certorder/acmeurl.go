package main

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/certorder/certorder/internal/acmeurl"
	"github.com/certorder/certorder/internal/printable"
)

// acmeActions are the values DigiCert's ACME directory URL takes for
// action (DigiCert, "ACME automation actions and URL parameters").
var acmeActions = []string{"enroll", "renew", "reissue", "duplicate"}

// acmeURL is "certorder acme-url": DIRECTORY_URL with its orderId moved to
// the newest order of the renewal chain, every other byte as given.
func (e *env) acmeURL(ctx context.Context, args []string) error {
	const cmd = "acme-url"
	fs := e.newFlags(cmd, "DIRECTORY_URL [flags]")
	creds := memberFlags(fs)
	order := fs.String("order", "", "the order to start from when DIRECTORY_URL has no orderId (it is added)")
	action := fs.String("action", "", "set or replace the URL's action: "+strings.Join(acmeActions, ", "))
	renewal := fs.String("certbot-renewal", "",
		"take DIRECTORY_URL from the server line of this certbot renewal file (/etc/letsencrypt/renewal/NAME.conf); it is only read")
	certFile := fs.String("cert", "", "start from the order of this certificate: a PEM, DER or chain file (its first certificate); the URL's orderId is replaced")
	pos, err := parseRange(fs, args, 0, 1)
	if err != nil {
		return err
	}
	var raw string
	switch {
	case *renewal != "" && len(pos) == 1:
		return usageError("%s: give DIRECTORY_URL or --certbot-renewal, not both", cmd)
	case *renewal != "":
		if raw, err = certbotServer(*renewal); err != nil {
			return usageError("%s: %v", cmd, err)
		}
	case len(pos) == 1:
		raw = pos[0]
	default:
		fs.Usage()
		return usageError("%s: want DIRECTORY_URL or --certbot-renewal FILE", cmd)
	}
	if err := acmeurl.Check(raw); err != nil {
		return usageError("%s: %v", cmd, err)
	}
	if *action != "" && !slices.Contains(acmeActions, *action) {
		return usageError("%s: --action %q is not one of %s", cmd, *action, strings.Join(acmeActions, ", "))
	}
	d, err := splitDirectoryURL(raw)
	if err != nil {
		return usageError("%s: %v", cmd, err)
	}
	id, err := d.orderID()
	if err != nil {
		return usageError("%s: %v", cmd, err)
	}
	if n := len(d.find("action")); n > 1 {
		return usageError("%s: the URL has %d action parameters: which one is meant?", cmd, n)
	}
	var cert *certArg
	if *certFile != "" {
		if *order != "" {
			return usageError("%s: give --order or --cert, not both", cmd)
		}
		if cert, err = readCertArg(cmd, *certFile); err != nil {
			return err
		}
	}
	if *order != "" {
		flagID, err := orderIDArg(*order)
		if err != nil {
			return err
		}
		if id != 0 && id != flagID {
			return usageError("%s: the URL names order %d and --order %d: give one", cmd, id, flagID)
		}
		id = flagID
	}
	if id == 0 && cert == nil {
		return usageError("%s: the URL has no orderId parameter: give the order with --order ID or --cert FILE", cmd)
	}
	c, err := creds.client(e, fs, cmd)
	if err != nil {
		return err
	}
	urlID := id
	if cert != nil {
		if id, err = e.certOrder(ctx, c, cert); err != nil {
			return memberExit(err, cmd, id, creds.endpoint, creds.name)
		}
	}
	cur, err := c.Current(ctx, id)
	if err != nil {
		return memberExit(err, cmd, id, creds.endpoint, creds.name)
	}
	if cert != nil && urlID != 0 && !slices.Contains(cur.Chain, urlID) {
		// Not an error: the URL may name an order the certificate's renewed.
		fmt.Fprintf(e.stderr, "the URL named order %d; the certificate belongs to order %d\n", urlID, id)
	}
	newest := cur.Order.OrderID
	d.set("orderId", strconv.FormatInt(newest, 10))
	if *action != "" {
		d.set("action", *action)
	}
	if _, err := fmt.Fprintln(e.stdout, d.String()); err != nil {
		return err
	}
	if newest != id {
		// The chain starts at id: its second order is the one that renewed
		// id, which is the newest only in a chain of two.
		newestOf := ""
		if len(cur.Chain) > 2 {
			newestOf = fmt.Sprintf("; the newest order of its chain (%s) is %d", chainText(cur.Chain), newest)
		}
		fmt.Fprintf(e.stderr, "order %d was renewed by %d%s (%s)\n", id, cur.Chain[1], newestOf, printable.String(cur.Order.Status))
	}
	return nil
}

// directoryURL is a URL cut where its query's parameters begin and end, so
// that changing one parameter leaves every other byte as it was: url.Values
// would sort the parameters and re-encode them.
type directoryURL struct {
	base     string   // everything before '?'
	params   []string // the query's parameters, raw, as split at '&'
	hasQuery bool     // there was a '?', even with nothing after it
	fragment string   // '#' and what follows, or ""
}

func splitDirectoryURL(raw string) (*directoryURL, error) {
	d := &directoryURL{base: raw}
	if i := strings.IndexByte(d.base, '#'); i >= 0 {
		d.base, d.fragment = d.base[:i], d.base[i:]
	}
	if i := strings.IndexByte(d.base, '?'); i >= 0 {
		query := d.base[i+1:]
		d.base, d.hasQuery = d.base[:i], true
		if query != "" {
			d.params = strings.Split(query, "&")
		}
	}
	return d, nil
}

// find returns the indexes of the parameters named name, compared after
// unescaping, as a server reads them, and without regard to case: a server
// may read OrderId= or orderid= as orderId, so such a one is replaced, and
// two of them are two orderIds, never one left beside the new value.
func (d *directoryURL) find(name string) []int {
	var at []int
	for i, p := range d.params {
		k, _, _ := strings.Cut(p, "=")
		if uk, err := url.QueryUnescape(k); err == nil && strings.EqualFold(uk, name) {
			at = append(at, i)
		}
	}
	return at
}

// orderID is the orderId parameter's value, 0 when there is none.
func (d *directoryURL) orderID() (int64, error) {
	at := d.find("orderId")
	switch len(at) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, fmt.Errorf("the URL has %d orderId parameters: which one is meant?", len(at))
	}
	_, v, _ := strings.Cut(d.params[at[0]], "=")
	uv, err := url.QueryUnescape(v)
	if err == nil {
		var id int64
		if id, err = strconv.ParseInt(uv, 10, 64); err == nil && id > 0 {
			return id, nil
		}
	}
	return 0, fmt.Errorf("orderId=%s in the URL is not an order number", v)
}

// set gives the parameter name the value (which needs no escaping: a
// number or one of acmeActions), in place, or appends it.
func (d *directoryURL) set(name, value string) {
	at := d.find(name)
	if len(at) == 0 {
		if n := len(d.params); n > 0 && d.params[n-1] == "" { // "?a=1&": fill the empty place
			d.params = d.params[:n-1]
		}
		d.params = append(d.params, name+"="+value)
		return
	}
	for _, i := range at {
		k, _, _ := strings.Cut(d.params[i], "=")
		d.params[i] = k + "=" + value
	}
}

func (d *directoryURL) String() string {
	s := d.base
	if d.hasQuery || len(d.params) > 0 {
		s += "?" + strings.Join(d.params, "&")
	}
	return s + d.fragment
}

// certbotServer reads the server line of a certbot renewal configuration
// file (configobj's "key = value", in the [renewalparams] section).
func certbotServer(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the certbot renewal file: %w", err)
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[] ")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "server" || section != "renewalparams" {
			continue
		}
		v = strings.TrimSpace(v)
		if i := strings.Index(v, " #"); i >= 0 { // an inline comment
			v = strings.TrimSpace(v[:i])
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		return v, nil
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return "", fmt.Errorf("%s has no server line in [renewalparams]: is it a certbot renewal file?", path)
}
