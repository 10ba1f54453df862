package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/storetest"
)

// A serial number given with 0x, as openssl x509 -serial and many tools
// print it, is the serial it names, on every command that takes one:
// --serial and the lines of --from.
func TestSerialHexPrefix(t *testing.T) {
	t.Parallel()
	c := newStoreCLI(t, testdb.SQLite(t))
	c.ok("admin", "member", "add", "alice")
	importDocs(t, c, "alice", storetest.CertJSON(7001, 501, "0CEC74C91B", "2026-03-01", "2026-09-16", "2029-03-01"))
	for _, given := range []string{"0x0CEC74C91B", "0XCEC74C91B", "0x0c:ec:74:c9:1b", " 0x0CEC74C91B "} {
		out := c.ok("admin", "order", "find", "--serial", given, "--json")
		if !strings.Contains(out, `"found":true,"order_id":7001`) {
			t.Errorf("--serial %q: %s", given, out)
		}
	}
	list := filepath.Join(t.TempDir(), "serials.txt")
	os.WriteFile(list, []byte("0x0CEC74C91B\n0xFFFF\n"), 0o600)
	out := c.ok("admin", "order", "find", "--from", list, "--json")
	if !strings.Contains(out, `{"query":"0x0CEC74C91B","found":true,"order_id":7001`) || !strings.Contains(out, `{"query":"0xFFFF","found":false}`) {
		t.Errorf("--from with 0x lines:\n%s", out)
	}
	// 0x alone, or with no hexadecimal after it, is still no serial.
	for _, bad := range []string{"0x", "0x0", "0xg1", "x12", "0x0x12"} {
		if msg := c.fails(exitUsage, "admin", "order", "find", "--serial", bad); !strings.Contains(msg, "is not a serial number") {
			t.Errorf("--serial %q: %s", bad, msg)
		}
	}
}

// A private key given as --cert (privkey.pem for cert.pem: the files
// certbot writes side by side) is named as such, on every command that
// takes --cert, in every PEM type a key comes in; the key is never printed.
func TestCertIsPrivateKey(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	ecDER, _ := x509.MarshalECPrivateKey(ecKey)
	dir := t.TempDir()
	m := newCLI(t, "")
	m.env["CERTORDER_URL"], m.env["CERTORDER_ACCESS_NAME"], m.env["CERTORDER_ACCESS_KEY"] = "http://127.0.0.1:1/api/digicert/", "alice", "cok_000000000000_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	for typ, der := range map[string][]byte{
		"PRIVATE KEY":     pkcs8,
		"RSA PRIVATE KEY": x509.MarshalPKCS1PrivateKey(rsaKey),
		"EC PRIVATE KEY":  ecDER,
	} {
		file := filepath.Join(dir, strings.ReplaceAll(strings.ToLower(typ), " ", "-")+".pem")
		block := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
		if err := os.WriteFile(file, block, 0o600); err != nil {
			t.Fatal(err)
		}
		keyLine := strings.Split(string(block), "\n")[1]
		want := "--cert " + file + " holds a private key, not a certificate; give the certificate (e.g. fullchain.pem or cert.pem)"
		for _, args := range [][]string{
			{"current", "--cert", file}, {"info", "--cert", file},
			{"acme-url", "--cert", file, "https://one.digicert.com/mpki/api/v1/acme/v2/directory?orderId=1"},
		} {
			msg := m.fails(exitUsage, args...)
			if !strings.Contains(msg, args[0]+": "+want) || strings.Contains(msg, keyLine[:20]) || strings.Contains(msg, "no CERTIFICATE block") {
				t.Errorf("%s (%s): %s", args[0], typ, msg)
			}
		}
	}
	// A key file with a certificate after it (a combined PEM) is a certificate.
	leaf := deployCert(t, "0a01", "leaf.example.com", 0, 1).Certificate[0]
	combined := filepath.Join(dir, "combined.pem")
	os.WriteFile(combined, append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf})...), 0o600)
	if _, errOut, err := m.run("", "current", "--cert", combined); err == nil || regexp.MustCompile(`private key|exit status 2`).MatchString(err.Error()+errOut) || exitCode(err) == exitUsage {
		t.Errorf("current --cert combined.pem (the service is down: not a usage error): %v %s", err, errOut)
	}
}
