package client_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/certorder/certorder/client"
)

// makeCert is a self-signed certificate with the serial number, as DER.
func makeCert(t *testing.T, serial *big.Int) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "host.example.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// The leaf of a PEM file (chain, key before it) or a DER file; its serial
// number asks CertificateCheck, which answers through the order's history.
func TestCertificateCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	endpoint, key := newService(t)
	c, err := client.New(endpoint, "alice", key)
	if err != nil {
		t.Fatal(err)
	}

	leaf, other := makeCert(t, big.NewInt(0x0A01)), makeCert(t, big.NewInt(0x0C05))
	block := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	for name, file := range map[string][]byte{
		"DER":              leaf,
		"PEM":              block("CERTIFICATE", leaf),
		"chain":            append(block("CERTIFICATE", leaf), block("CERTIFICATE", other)...),
		"key, then leaf":   append(block("PRIVATE KEY", []byte{1, 2, 3}), block("CERTIFICATE", leaf)...),
		"text around PEM":  append([]byte("subject=CN=host\n"), block("CERTIFICATE", leaf)...),
		"chain, CRLF ends": bytes.ReplaceAll(append(block("CERTIFICATE", leaf), block("CERTIFICATE", other)...), []byte("\n"), []byte("\r\n")),
	} {
		cert, err := client.ParseCertificate(file)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got, err := c.CertificateCheck(ctx, client.KeyOf(cert))
		if err != nil || got.OrderID != 11 || got.CertificateID.Value != 501 || got.IsCurrent {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
	for name, file := range map[string][]byte{
		"empty": nil, "text": []byte("not a certificate"), "a key alone": block("PRIVATE KEY", []byte{1}),
		"a broken certificate": block("CERTIFICATE", leaf[:len(leaf)/2]),
	} {
		if cert, err := client.ParseCertificate(file); err == nil {
			t.Errorf("%s: read as %v", name, cert.Subject)
		}
	}

	cert, _ := x509.ParseCertificate(leaf)
	if sum := sha1.Sum(leaf); client.ThumbprintOf(cert) != fmt.Sprintf("%X", sum) || len(client.ThumbprintOf(cert)) != 40 {
		t.Errorf("ThumbprintOf = %s", client.ThumbprintOf(cert))
	}
	if got, err := c.CertificateCheck(ctx, client.CertificateKey{Thumbprint: "02:02:02:02:02:02:02:02:02:02:02:02:02:02:02:02:02:02:02:02"}); err != nil ||
		got.OrderID != 11 || got.CertificateID.Value != 502 || !got.IsCurrent {
		t.Errorf("by thumbprint: %+v, %v", got, err)
	}
	cert, _ = x509.ParseCertificate(other)
	if _, err := c.CertificateCheck(ctx, client.KeyOf(cert)); !errors.Is(err, client.ErrNoSuchCertificate) || errors.Is(err, client.ErrNoSuchOrder) {
		t.Errorf("an unknown certificate: %v", err)
	}
	if _, err := c.CertificateCheck(ctx, client.CertificateKey{}); err == nil {
		t.Error("no key: no error")
	}
}
