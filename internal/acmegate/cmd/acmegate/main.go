// Command acmegate runs the test ACME server of package acmegate (Pebble
// behind a gate playing DigiCert's directory URL) on loopback, for the CI
// script that drives the real certbot and lego against it (.ci/acme.sh).
// It is a test tool, not part of certorder.
//
//	acmegate -addr 127.0.0.1:14000 -tls-ca-out ca.pem -eab-kid kid-1 -eab-hmac-file hmac \
//	    -url http://127.0.0.1:8080/api/digicert/ -access-name acme -access-key-file key
//
// It prints "listening on https://ADDR" once it serves; GET /gate-status
// says what it has seen. The EAB HMAC key and the access key are read from
// files and never printed.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/acmegate"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:14000", "listen on this loopback address")
	caOut := flag.String("tls-ca-out", "", "write the PEM of the gate's TLS certificate (self-signed) here, for the clients to trust")
	kid := flag.String("eab-kid", "kid-1", "the external account binding key ID")
	hmacFile := flag.String("eab-hmac-file", "", "a file holding the EAB HMAC key, base64url")
	endpoint := flag.String("url", "", "certorder's member endpoint")
	name := flag.String("access-name", "", "the member")
	keyFile := flag.String("access-key-file", "", "a file holding the member's API key")
	httpPort := flag.Int("http-port", 5002, "the port Pebble fetches http-01 challenges from")
	verbose := flag.Bool("v", false, "log Pebble's messages to stderr")
	flag.Parse()

	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		log.Fatalf("acmegate: -addr %s is not a loopback address", *addr)
	}
	hmac, err := os.ReadFile(*hmacFile)
	if err != nil {
		log.Fatalf("acmegate: reading -eab-hmac-file: %v", err)
	}
	key, err := os.ReadFile(*keyFile)
	if err != nil {
		log.Fatalf("acmegate: reading -access-key-file: %v", err)
	}
	members, err := client.New(*endpoint, *name, strings.TrimSpace(string(key)))
	if err != nil {
		log.Fatalf("acmegate: %v", err)
	}
	cfg := acmegate.Config{Members: members, HTTPPort: *httpPort,
		EAB: map[string]string{*kid: strings.TrimSpace(string(hmac))}}
	if *verbose {
		cfg.Log = log.New(os.Stderr, "pebble ", log.LstdFlags)
	}
	gate, err := acmegate.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	cert, err := selfSigned(*caOut)
	if err != nil {
		log.Fatalf("acmegate: %v", err)
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on https://%s\n", l.Addr())
	srv := &http.Server{Handler: gate, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	log.Fatal(srv.ServeTLS(l, "", ""))
}

// selfSigned makes a certificate for the loopback names and writes its
// PEM to caOut.
func selfSigned(caOut string) (tls.Certificate, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "acmegate test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return tls.Certificate{}, err
	}
	if caOut != "" {
		if err := os.WriteFile(caOut, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
			return tls.Certificate{}, err
		}
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, nil
}
