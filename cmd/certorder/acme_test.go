package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-acme/lego/v5/acme"
	"github.com/go-acme/lego/v5/certcrypto"
	"github.com/go-acme/lego/v5/certificate"
	"github.com/go-acme/lego/v5/challenge/http01"
	"github.com/go-acme/lego/v5/lego"
	legolog "github.com/go-acme/lego/v5/log"
	"github.com/go-acme/lego/v5/registration"

	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/acmegate"
)

// acmeUser is a lego account: a key and, once registered, its account.
type acmeUser struct {
	key crypto.Signer
	reg *acme.ExtendedAccount
}

func (u *acmeUser) GetEmail() string                       { return "" }
func (u *acmeUser) GetRegistration() *acme.ExtendedAccount { return u.reg }
func (u *acmeUser) GetPrivateKey() crypto.Signer           { return u.key }

// TestACMEWithLego obtains certificates with lego (as a library) from
// Pebble behind the gate that plays DigiCert, with the directory URLs
// "certorder acme-url" prints.
func TestACMEWithLego(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an ACME server and client: not with -short")
	}
	t.Parallel() // Pebble's settings are TestMain's (the environment is the process's)
	legolog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	m, op, key := acmeChainsWithOperator(t)

	// http-01 for real, on loopback: lego answers on this port, Pebble asks it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	members, err := client.New(m.env["CERTORDER_URL"], "acme", key)
	if err != nil {
		t.Fatal(err)
	}
	hmac := make([]byte, 32)
	rand.Read(hmac)
	eabKey := base64.RawURLEncoding.EncodeToString(hmac)
	gate, err := acmegate.New(acmegate.Config{Members: members, EAB: map[string]string{"kid-1": eabKey}, HTTPPort: port})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(gate)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	directory := srv.URL + acmegate.DirectoryPath

	accountKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	user := &acmeUser{key: accountKey}
	newClient := func(dirURL string) (*lego.Client, error) {
		cfg := lego.NewConfig(user)
		cfg.CADirURL = dirURL
		cfg.HTTPClient = srv.Client()
		cfg.UserAgent = "certorder-test"
		return lego.NewClient(cfg)
	}
	obtain := func(dirURL string) error {
		t.Helper()
		c, err := newClient(dirURL)
		if err != nil {
			return err
		}
		if user.reg == nil {
			if user.reg, err = c.Registration.RegisterWithExternalAccountBinding(context.Background(),
				registration.RegisterEABOptions{TermsOfServiceAgreed: true, Kid: "kid-1", HmacEncoded: eabKey}); err != nil {
				t.Fatalf("registering: %v", err)
			}
		}
		if err := c.Challenge.SetHTTP01Provider(http01.NewProviderServer("127.0.0.1", strconv.Itoa(port))); err != nil {
			t.Fatal(err)
		}
		res, err := c.Certificate.Obtain(context.Background(), certificate.ObtainRequest{Domains: []string{"localhost"}, Bundle: true, KeyType: certcrypto.EC256})
		if err != nil {
			return err
		}
		block, _ := pem.Decode(res.Certificate)
		if block == nil {
			t.Fatalf("no certificate in %q", res.Certificate)
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err != nil || cert.DNSNames[0] != "localhost" {
			t.Fatalf("the certificate: %v", err)
		}
		return nil
	}
	acmeURL := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := m.run("", append([]string{"acme-url"}, args...)...)
		if err != nil {
			t.Fatalf("acme-url %v: %v\n%s", args, err, errOut)
		}
		return strings.TrimSuffix(out, "\n"), errOut
	}
	wantIssued := func(want ...int64) {
		t.Helper()
		var got []int64
		for _, is := range gate.Issuances() {
			got = append(got, is.OrderID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the gate issued under orders %v, want %v", got, want)
		}
	}

	// OLD -> NEW, NEW pending (not issued, no valid_till).
	old := directory + "?action=renew&orderId=21000105"
	cur, note := acmeURL(old)
	if cur != directory+"?action=renew&orderId=21000106" || note != "order 21000105 was renewed by 21000106 (pending)\n" {
		t.Fatalf("acme-url: %q %q", cur, note)
	}
	if err := obtain(cur); err != nil {
		t.Fatalf("obtaining with %s: %v", cur, err)
	}
	wantIssued(21000106)
	if is := gate.Issuances()[0]; is.Action != "renew" {
		t.Errorf("action %q", is.Action)
	}

	// The stale URL is refused, naming the newer order.
	_, err = newClient(old)
	if err == nil || !strings.Contains(err.Error(), "urn:ietf:params:acme:error:unauthorized") ||
		!strings.Contains(err.Error(), "renewed by order 21000106") {
		t.Fatalf("the stale URL: %v", err)
	}
	if r := gate.Refusals(); len(r) != 1 || r[0].OrderID != 21000105 || r[0].Newest != 21000106 {
		t.Fatalf("refusals: %+v", r)
	}

	// A two-step chain, the same account.
	cur, _ = acmeURL(directory+"?orderId=300", "--action", "renew")
	if cur != directory+"?orderId=302&action=renew" {
		t.Fatalf("two-step: %s", cur)
	}
	if err := obtain(cur); err != nil {
		t.Fatal(err)
	}
	wantIssued(21000106, 302)

	// A directory fetched before a renewal, used after it: newOrder is refused.
	cur, _ = acmeURL("--order", "500", directory)
	c, err := newClient(cur)
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := op.run(unissuedOrderJSON(501, "pending"), "admin", "order", "import", "--member", "acme", "-"); err != nil {
		t.Fatalf("import: %v %s %s", err, out, errOut)
	}
	op.ok("admin", "order", "renew", "500", "501")
	c.Challenge.SetHTTP01Provider(http01.NewProviderServer("127.0.0.1", strconv.Itoa(port)))
	_, err = c.Certificate.Obtain(context.Background(), certificate.ObtainRequest{Domains: []string{"localhost"}, Bundle: true, KeyType: certcrypto.EC256})
	if err == nil || !strings.Contains(err.Error(), "renewed by order 501") {
		t.Fatalf("newOrder with a stale directory: %v", err)
	}
	wantIssued(21000106, 302)
	if n := gate.Accounts(); n != 1 {
		t.Errorf("%d accounts registered, want 1", n)
	}

	// Pebble's own entry points are closed: no issuance without an order.
	resp, err := srv.Client().Get(srv.URL + "/dir")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("/dir: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
