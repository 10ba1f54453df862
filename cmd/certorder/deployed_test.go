package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"math/big"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/smtptest"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/storetest"
)

// day is the date n days from today, UTC.
func day(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format("2006-01-02") }

// deployCert is a self-signed certificate with the serial number
// (hexadecimal) and common name, valid from `from` to `till` days from now.
func deployCert(t *testing.T, serial, cn string, from, till int) tls.Certificate {
	t.Helper()
	n, ok := new(big.Int).SetString(serial, 16)
	if !ok {
		t.Fatalf("serial %q", serial)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: n, Subject: pkix.Name{CommonName: cn}, DNSNames: []string{"www.example.com"},
		NotBefore: now.AddDate(0, 0, from), NotAfter: now.AddDate(0, 0, till)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// serveTLS serves on addr, until the test ends, the certificate pick
// chooses for the name a client asks for (SNI; "" for none), and returns
// the address it listens on.
func serveTLS(t *testing.T, addr string, pick func(sni string) tls.Certificate) string {
	t.Helper()
	ln, err := tls.Listen("tcp", addr, &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		c := pick(h.ServerName)
		return &c, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed
			}
			go func() {
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				conn.(*tls.Conn).Handshake()
			}()
		}
	}()
	return ln.Addr().String()
}

func always(c tls.Certificate) func(string) tls.Certificate {
	return func(string) tls.Certificate { return c }
}

// certorder deployed against TLS servers on loopback serving certificates
// with chosen serials, through a real serve whose orders' certificate
// histories hold them: the current certificate, one a reissue replaced,
// one of a renewed order, one ending, another member's, an unknown one,
// nothing listening, a name that never resolves, a server that never
// answers; several at once, --json, --quiet, --nagios, --servername (SNI),
// --starttls smtp, IPv6, refused credentials and bad arguments.
func TestDeployed(t *testing.T) {
	t.Parallel()
	testdb.Each(t, testDeployed)
}

func testDeployed(t *testing.T, dsn string) {
	c := newStoreCLI(t, dsn)
	c.ok("admin", "member", "add", "alice")
	c.ok("admin", "member", "add", "bob")
	// 7001: 0A01 reissued as 0A02. 7101 renewed by 7102, issued. 7201
	// ends in 5 days (its serial written with DER's leading zero octet).
	importDocs(t, c, "alice", storetest.CertJSON(7001, 501, "0A01", day(-190), day(10), day(700)))
	importDocs(t, c, "alice", storetest.CertJSON(7001, 502, "0A02", day(-10), day(120), day(700)),
		storetest.CertJSON(7101, 511, "0B01", day(-150), day(40), day(60)),
		storetest.CertJSON(7102, 512, "0B02", day(-1), day(190), day(800)),
		storetest.CertJSON(7201, 521, "00C5A1", day(-190), day(5), day(700)))
	c.ok("admin", "order", "renew", "7101", "7102")
	// 7301's renewal 7302 was canceled: 7301 stays the one to serve.
	importDocs(t, c, "alice", storetest.CertJSON(7301, 531, "0E01", day(-10), day(150), day(700)), storetest.PendingJSON(7302, "canceled"))
	c.ok("admin", "order", "renew", "7301", "7302")
	importDocs(t, c, "bob", storetest.CertJSON(8001, 601, "0D01", day(-10), day(100), day(700)))
	endpoint, _ := startServe(t, c, "--rate-limit", "0", "--ip-rate-limit", "0")
	key := lastLine(c.ok("admin", "key", "create", "alice"))
	m := newCLI(t, "")
	m.env["CERTORDER_URL"], m.env["CERTORDER_ACCESS_NAME"], m.env["CERTORDER_ACCESS_KEY"] = endpoint, "alice", key

	currentCert := deployCert(t, "0A02", "www.example.com", -10, 120)
	replacedCert := deployCert(t, "0A01", "www.example.com", -190, 10)
	current := serveTLS(t, "127.0.0.1:0", always(currentCert))
	replaced := serveTLS(t, "127.0.0.1:0", always(replacedCert))
	renewed := serveTLS(t, "127.0.0.1:0", always(deployCert(t, "0B01", "shop.example.com", -150, 40)))
	ending := serveTLS(t, "127.0.0.1:0", always(deployCert(t, "C5A1", "soon.example.com", -190, 5)))
	bobs := serveTLS(t, "127.0.0.1:0", always(deployCert(t, "0D01", "bob.example.com", -10, 100)))
	unknown := serveTLS(t, "127.0.0.1:0", always(deployCert(t, "7F0E2D", "evil\x1b]0;pwned\x07.example.com", -10, 80)))
	refused := freeAddr(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts (the kernel does), never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	deploy := func(want int, args ...string) (stdout, stderr string) {
		t.Helper()
		out, errOut, err := m.run("", append([]string{"deployed"}, args...)...)
		if got := exitCode(err); err == nil && want != 0 || err != nil && got != want {
			t.Fatalf("deployed %s: exit %d (%v), want %d\n%s%s", strings.Join(args, " "), got, err, want, out, errOut)
		}
		return out, errOut
	}
	oneLine := func(out, re string) {
		t.Helper()
		if !regexp.MustCompile(`^` + re + `\n$`).MatchString(out) {
			t.Errorf("want one line matching %s, got:\n%s", re, out)
		}
	}
	const till = `\(till \d{4}-\d\d-\d\d\)`

	if _, _, err := m.run("", "deployed", replaced); !errors.Is(err, errSaid) {
		t.Errorf("a replaced certificate: %v, want the lines alone (errSaid)", err)
	}
	out, errOut := deploy(0, current)
	oneLine(out, regexp.QuoteMeta(current)+`: current: order 7001; serial 0a02 \(CN www\.example\.com\), 120 days left `+till)
	if !strings.Contains(errOut, "certorder: warning: "+current+": the certificate does not verify against the system roots for 127.0.0.1: ") {
		t.Errorf("no warning of a self-signed certificate: %q", errOut)
	}
	out, _ = deploy(exitReplaced, replaced)
	oneLine(out, regexp.QuoteMeta(replaced+": replaced: order 7001, replaced by a reissue on "+day(-10)+
		": the order's current certificate is serial 0a02 (valid till "+day(120)+"); serial 0a01 (CN www.example.com), 10 days left ")+till)
	out, _ = deploy(exitReplaced, renewed)
	oneLine(out, regexp.QuoteMeta(renewed+": renewed: order 7101, renewed: the newest order of its chain (7101 -> 7102) is 7102; serial 0b01 (CN shop.example.com), 40 days left ")+
		till+`; next step: renewed as 7102`)
	out, _ = deploy(exitReplaced, "--warn-days", "14", ending)
	oneLine(out, regexp.QuoteMeta(ending+": ending: order 7201, ending within --warn-days 14; serial c5a1 (CN soon.example.com), 5 days left ")+till+
		`; next step: reissue by `+day(5))
	out, _ = deploy(exitReplaced, ending) // the certificate's reissue window: 30 days
	oneLine(out, regexp.QuoteMeta(ending+": ending: order 7201, ending within its reissue window (30 days);")+`.*`)
	out, _ = deploy(0, "--json", serveTLS(t, "127.0.0.1:0", always(deployCert(t, "0E01", "kept.example.com", -10, 150))))
	if !strings.Contains(out, `"order_id":7301,"is_current":true,"state":"current","current_serial_number":"0e01","newest_order_id":7301,`) {
		t.Errorf("a certificate whose renewal was canceled: %s", out)
	}
	out, _ = deploy(0, "--warn-days", "3", ending)
	oneLine(out, regexp.QuoteMeta(ending+": current: order 7201;")+`.*; next step: reissue by `+day(5))
	for _, addr := range []string{bobs, unknown} {
		out, _ = deploy(exitNoSuchOrder, addr)
		oneLine(out, regexp.QuoteMeta(addr+`: unknown: the service said "Error(161) serial_number is failed." (HTTP 404): `+
			"it is not a certificate of member alice's orders (another CA's, or another member's); serial ")+
			`\w+ \(CN .*\), \d+ days left `+till)
	}
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `(CN "evil\x1b]0;pwned\a.example.com")`) {
		t.Errorf("the server's common name is not escaped: %q", out)
	}
	out, _ = deploy(exitUnreachable, refused)
	oneLine(out, regexp.QuoteMeta(refused)+`: unreachable: connection refused \(nothing listens on port \d+\): .*`)
	out, _ = deploy(exitUnreachable, "nowhere.invalid")
	oneLine(out, `nowhere\.invalid:443: unreachable: the host name does not resolve: .*`)
	out, _ = deploy(exitUnreachable, "--connect-timeout", "300ms", silent.Addr().String())
	oneLine(out, regexp.QuoteMeta(silent.Addr().String())+`: unreachable: no TLS handshake within --connect-timeout 300ms: .*`)

	// Several targets: a line each, in their order; the highest code.
	all := []string{current, replaced, renewed, bobs, refused, "nowhere.invalid"}
	out, _ = deploy(exitReplaced, all...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(all) {
		t.Fatalf("%d targets, %d lines:\n%s", len(all), len(lines), out)
	}
	for i, state := range []string{"current", "replaced", "renewed", "unknown", "unreachable", "unreachable"} {
		addr := all[i]
		if !strings.Contains(addr, ":") {
			addr += ":443"
		}
		if want := addr + ": " + state + ": "; !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: %s, want %s...", i, lines[i], want)
		}
	}
	deploy(exitUnreachable, current, refused, bobs) // 6 beats 4 and 0

	// --json: an object a line, with exactly the documented keys.
	out, _ = deploy(exitReplaced, append([]string{"--json"}, all...)...)
	var objs []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var o map[string]any
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("--json line %q: %v", l, err)
		}
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"current_serial_number", "days_left", "error", "host", "is_current", "newest_order_id", "not_after", "order_id",
			"port", "serial_number", "servername", "state", "thumbprint"}; !slices.Equal(keys, want) {
			t.Errorf("--json keys %v, want %v", keys, want)
		}
		objs = append(objs, o)
	}
	if len(objs) != len(all) {
		t.Fatalf("--json: %d lines for %d targets", len(objs), len(all))
	}
	thumb := client.ThumbprintOf(currentCert.Leaf)
	for i, want := range []map[string]any{
		{"host": "127.0.0.1", "servername": "127.0.0.1", "serial_number": "0a02", "thumbprint": thumb, "days_left": 120.0, "order_id": 7001.0,
			"is_current": true, "state": "current", "current_serial_number": "0a02", "newest_order_id": 7001.0, "error": nil,
			"not_after": currentCert.Leaf.NotAfter.UTC().Format(time.RFC3339)},
		{"serial_number": "0a01", "order_id": 7001.0, "is_current": false, "state": "replaced", "current_serial_number": "0a02", "newest_order_id": 7001.0, "error": nil},
		{"serial_number": "0b01", "order_id": 7101.0, "is_current": true, "state": "renewed", "current_serial_number": "0b01", "newest_order_id": 7102.0},
		{"serial_number": "0d01", "order_id": nil, "is_current": nil, "state": "unknown", "current_serial_number": nil, "newest_order_id": nil},
		{"serial_number": nil, "thumbprint": nil, "not_after": nil, "days_left": nil, "state": "unreachable", "order_id": nil},
		{"host": "nowhere.invalid", "port": 443.0, "servername": "nowhere.invalid", "state": "unreachable"},
	} {
		for k, v := range want {
			if objs[i][k] != v {
				t.Errorf("--json target %d: %s = %v, want %v", i, k, objs[i][k], v)
			}
		}
		if e, _ := objs[i]["error"].(string); (i >= 3) != (e != "") {
			t.Errorf("--json target %d: error %v", i, objs[i]["error"])
		}
	}

	// --quiet: nothing when all is well; the others' lines.
	if out, _ = deploy(0, "--quiet", current, current); out != "" {
		t.Errorf("--quiet printed %q", out)
	}
	out, _ = deploy(exitReplaced, "--quiet", current, replaced)
	oneLine(out, regexp.QuoteMeta(replaced)+`: replaced: .*`)
	// --nagios: one line, the plugin's exit codes.
	out, _ = deploy(0, "--nagios", current)
	oneLine(out, `DEPLOYED OK - 1 of 1 targets serve their order's current certificate \| '127\.0\.0\.1:\d+ days_left'=120;31:;0:`)
	out, _ = deploy(1, "--nagios", current, replaced)
	oneLine(out, `DEPLOYED WARNING - 1 of 2 targets serve their order's current certificate: 127\.0\.0\.1:\d+ replaced \| .*`)
	out, _ = deploy(2, "--nagios", current, replaced, refused)
	oneLine(out, `DEPLOYED CRITICAL - 1 of 3 targets .*: 127\.0\.0\.1:\d+ replaced, 127\.0\.0\.1:\d+ unreachable \| .*`)

	// --servername: the name asked for (SNI) picks the certificate.
	bySNI := serveTLS(t, "127.0.0.1:0", func(sni string) tls.Certificate {
		if sni == "www.example.com" {
			return currentCert
		}
		return replacedCert
	})
	deploy(exitReplaced, bySNI) // an IP address is not sent as SNI
	out, _ = deploy(0, "--servername", "www.example.com", "--json", bySNI)
	if !strings.Contains(out, `"servername":"www.example.com"`) || !strings.Contains(out, `"state":"current"`) {
		t.Errorf("--servername --json: %s", out)
	}
	out, _ = deploy(0, "--servername", "www.example.com", bySNI)
	oneLine(out, regexp.QuoteMeta(bySNI+" (servername www.example.com): current: order 7001;")+`.*`)

	// --starttls smtp: EHLO, STARTTLS, then the certificate.
	mail := smtptest.StartWithCertificate(t, false, currentCert)
	out, _ = deploy(0, "--starttls", "smtp", mail.Addr)
	oneLine(out, regexp.QuoteMeta(mail.Addr)+`: current: order 7001; serial 0a02 .*`)
	out, _ = deploy(exitUnreachable, mail.Addr) // TLS from the first byte: an SMTP greeting answers
	oneLine(out, regexp.QuoteMeta(mail.Addr)+`: unreachable: no TLS: .*`)

	// IPv6, where loopback has it.
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ln.Close()
		v6 := serveTLS(t, "[::1]:0", always(currentCert))
		out, _ = deploy(0, "--json", v6)
		if !strings.Contains(out, `"host":"::1"`) || !strings.Contains(out, `"state":"current"`) {
			t.Errorf("IPv6 %s: %s", v6, out)
		}
	}

	// Refused credentials: exit 3, for every target, asked once at most per worker.
	m.env["CERTORDER_ACCESS_KEY"] = "cok_000000000000_" + strings.Repeat("a", 39)
	out, _ = deploy(exitCredentials, current, replaced)
	if n := strings.Count(out, ": unknown: credentials rejected for AccessName alice"); n != 2 {
		t.Errorf("refused credentials:\n%s", out)
	}
	m.env["CERTORDER_ACCESS_KEY"] = key

	// Bad arguments: exit 2, nothing probed.
	for _, args := range [][]string{
		{}, {"https://www.example.com/"}, {"::1"}, {"www.example.com:0"}, {"www.example.com:https"}, {"[www.example.com]:443"},
		{"exa mple.com"}, {"--starttls", "imap", current}, {"--servername", "a b", current}, {"--warn-days", "-1", current},
		{"--connect-timeout", "0s", current}, {current, "host:"},
	} {
		if out, _ := deploy(exitUsage, args...); out != "" {
			t.Errorf("deployed %q printed %q", args, out)
		}
	}
	out, _ = deploy(nagiosUnknown, "--nagios", "::1")
	oneLine(out, `DEPLOYED UNKNOWN - deployed: "::1": an IPv6 address goes in brackets: .*`)
	out, _ = deploy(nagiosUnknown, "--nagios", "--json", current)
	oneLine(out, `DEPLOYED UNKNOWN - deployed: --nagios prints its own line: .*`)
}
