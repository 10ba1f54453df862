package main

import (
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert/digicerttest"
	"github.com/certorder/certorder/internal/testdb"
)

// certFiles writes a certificate with the serial number (hexadecimal, as
// CertCentral gives it) in the forms a member's server holds it: DER, PEM,
// a chain file (leaf, then its issuer) and, where openssl is installed, a
// PEM file openssl made. The names say which.
func certFiles(t *testing.T, serial string) map[string]string {
	t.Helper()
	leaf := deployCert(t, serial, "leaf.example.com", 0, 1).Certificate[0]
	issuer := deployCert(t, "1", "Issuing CA", 0, 1).Certificate[0]
	pemOf := func(der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}) }
	dir := t.TempDir()
	files := map[string]string{}
	for name, b := range map[string][]byte{"cert.der": leaf, "cert.pem": pemOf(leaf), "fullchain.pem": append(pemOf(leaf), pemOf(issuer)...)} {
		files[name] = filepath.Join(dir, name)
		if err := os.WriteFile(files[name], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if openssl, err := exec.LookPath("openssl"); err == nil {
		f := filepath.Join(dir, "openssl.pem")
		out, err := exec.Command(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
			"-keyout", filepath.Join(dir, "openssl.key"), "-out", f, "-subj", "/CN=leaf.example.com", "-days", "1",
			"-set_serial", "0x"+serial).CombinedOutput()
		if err != nil {
			t.Fatalf("openssl: %v\n%s", err, out)
		}
		files["openssl.pem"] = f
	}
	return files
}

// A member with nothing but the certificate file: current --cert, info
// --cert and acme-url --cert find the order through CertificateCheck and
// follow its renewal chain, against the simulator after a reissue and a
// renewal, from PEM, DER and chain files (Go's and openssl's); a replaced
// certificate is said on stderr; unknown and unreadable certificates get
// the documented exit codes.
func TestMemberCert(t *testing.T) {
	t.Parallel()
	testdb.Each(t, testMemberCert)
}

func testMemberCert(t *testing.T, dsn string) {
	u := newUpstream(t, digicerttest.Options{NoLimits: true})
	created := time.Now().Add(-100 * 24 * time.Hour)
	old, err := u.sim.AddOrder(digicerttest.OrderSpec{ContainerID: 10001, ValidityYears: 1, Created: created, CommonName: "shop.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if err := u.sim.Issue(old, created); err != nil {
		t.Fatal(err)
	}
	c := syncCLI(t, dsn, u)
	c.ok("admin", "member", "add", "alice")
	c.ok("admin", "member", "link", "alice", "--container", "10001")
	c.sync()
	endpoint, _ := startServe(t, c, "--rate-limit", "0", "--ip-rate-limit", "0")
	key := lastLine(c.ok("admin", "key", "create", "alice"))
	serialOf := func(id int64) string {
		t.Helper()
		code, body := post(t, endpoint, request("alice", key, "OrderInfo", strconv.FormatInt(id, 10)))
		m := regexp.MustCompile(`"serial_number":"([0-9a-fA-F]+)"`).FindStringSubmatch(body)
		if code != 200 || m == nil {
			t.Fatalf("OrderInfo %d: %d %s", id, code, body)
		}
		return m[1]
	}
	first := serialOf(old)
	// Reissued, then renewed and the renewal issued.
	if _, err := u.sim.Reissue(old, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := u.sim.Issue(old, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	renewal, err := u.sim.Renew(old, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := u.sim.Issue(renewal, time.Now()); err != nil {
		t.Fatal(err)
	}
	c.sync()
	second, third := serialOf(old), serialOf(renewal)

	m := newCLI(t, "")
	m.env["CERTORDER_URL"], m.env["CERTORDER_ACCESS_NAME"], m.env["CERTORDER_ACCESS_KEY"] = endpoint, "alice", key
	oldS, renewalS := strconv.FormatInt(old, 10), strconv.FormatInt(renewal, 10)
	directory := "https://one.digicert.com/mpki/api/v1/acme/v2/directory?action=renew&orderId=" + oldS
	replaced := regexp.MustCompile(`^this certificate was replaced by a reissue on \d{4}-\d\d-\d\d; ` +
		`the order's current certificate is serial ` + second + ` \(valid till \d{4}-\d\d-\d\d\)\n`)
	for _, tc := range []struct {
		serial   string
		replaced bool
	}{{first, true}, {second, false}, {third, false}} {
		for name, file := range certFiles(t, tc.serial) {
			what := tc.serial + " " + name
			out, errOut, err := m.run("", "current", "--cert", file, "--id")
			if err != nil || out != renewalS+"\n" || replaced.MatchString(errOut) != tc.replaced {
				t.Errorf("current --cert %s: %v\n%s%s", what, err, out, errOut)
			}
			out, errOut, err = m.run("", "acme-url", "--cert", file, directory)
			if want := strings.Replace(directory, "orderId="+oldS, "orderId="+renewalS, 1) + "\n"; err != nil || out != want {
				t.Errorf("acme-url --cert %s: %v\n%s%s", what, err, out, errOut)
			}
		}
	}
	// info --cert: the certificate's order, and where its chain leads.
	files := certFiles(t, first)
	out, errOut, err := m.run("", "info", "--cert", files["cert.pem"])
	if err != nil || !regexp.MustCompile(`(?m)^Order:\s+`+oldS+`$`).MatchString(out) ||
		!strings.Contains(out, "Current order: "+renewalS+" (renewal chain "+oldS+" -> "+renewalS+")") || !replaced.MatchString(errOut) {
		t.Errorf("info --cert: %v\n%s%s", err, out, errOut)
	}
	// acme-url --cert adds orderId to a URL without one.
	if out, _, err := m.run("", "acme-url", "--cert", files["cert.der"], "https://acme.example/directory"); err != nil ||
		out != "https://acme.example/directory?orderId="+renewalS+"\n" {
		t.Errorf("acme-url --cert without orderId: %v %s", err, out)
	}

	// Another CA's certificate: exit 4 (no such order), saying why.
	unknown := certFiles(t, "7f0e2d")["cert.pem"]
	for _, args := range [][]string{{"current", "--cert", unknown}, {"info", "--cert", unknown}, {"acme-url", "--cert", unknown, directory}} {
		if msg := m.fails(exitNoSuchOrder, args...); !strings.Contains(msg, "serial 7F0E2D") || !strings.Contains(msg, "not a certificate of member alice's orders") {
			t.Errorf("%v: %s", args, msg)
		}
	}
	// Unreadable files and ambiguous arguments: exit 2.
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	os.WriteFile(garbage, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
	for _, args := range [][]string{
		{"current", "--cert", garbage}, {"current", "--cert", filepath.Join(t.TempDir(), "missing.pem")},
		{"current", oldS, "--cert", files["cert.pem"]}, {"current"}, {"info"},
		{"acme-url", "--cert", files["cert.pem"], "--order", oldS, directory},
	} {
		m.fails(exitUsage, args...)
	}
}
