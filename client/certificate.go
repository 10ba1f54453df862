package client

import (
	"context"
	"crypto/sha1"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// CertificateKey names a certificate for CertificateCheck: by its serial
// number or by its SHA-1 thumbprint, one of the two. Both are hexadecimal;
// the service ignores case, colons and spaces (and a serial's leading zeros).
type CertificateKey struct {
	SerialNumber string
	Thumbprint   string
}

// KeyOf is the key of a certificate: its serial number, in hexadecimal.
// (Its thumbprint, ThumbprintOf, names it too; the serial is what every
// certificate's history records.)
func KeyOf(cert *x509.Certificate) CertificateKey {
	return CertificateKey{SerialNumber: cert.SerialNumber.Text(16)}
}

// ThumbprintOf is a certificate's SHA-1 thumbprint as CertCentral writes
// it: 40 hexadecimal digits in upper case.
func ThumbprintOf(cert *x509.Certificate) string {
	sum := sha1.Sum(cert.Raw)
	return fmt.Sprintf("%X", sum[:])
}

// ErrPrivateKey is ParseCertificate's error for a PEM file that holds a
// private key and no certificate: privkey.pem given for cert.pem.
var ErrPrivateKey = errors.New("the PEM file holds a private key, not a certificate")

// ParseCertificate reads the leaf certificate of what a certificate file
// holds: PEM (the first CERTIFICATE block, so the leaf of a chain file such
// as certbot's fullchain.pem; other blocks, such as a private key, are
// skipped) or DER.
func ParseCertificate(data []byte) (*x509.Certificate, error) {
	rest := data
	privateKey := false
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
		// PRIVATE KEY, RSA PRIVATE KEY, EC PRIVATE KEY, ENCRYPTED PRIVATE KEY...
		privateKey = privateKey || strings.HasSuffix(block.Type, "PRIVATE KEY")
	}
	if privateKey {
		return nil, ErrPrivateKey
	}
	if cert, err := x509.ParseCertificate(data); err == nil {
		return cert, nil
	}
	if len(rest) < len(data) {
		return nil, errors.New("the PEM file holds no CERTIFICATE block")
	}
	return nil, errors.New("neither PEM with a CERTIFICATE block nor a DER certificate")
}

// CertificateCheck is the CertificateCheck answer: the member's order the
// certificate belongs to, the certificate's ID (CertificateID.Valid is false
// when the CA gave none), and whether it is still the order's current
// certificate (false once a reissue of the order was issued).
type CertificateCheck struct {
	OrderID       int64 `json:"orderId"`
	CertificateID Int   `json:"certificate_id"`
	IsCurrent     bool  `json:"is_current"`

	Raw json.RawMessage `json:"-"`
}

// CertificateCheck asks which of the member's orders a certificate belongs
// to: through the orders' certificate histories, so that an earlier
// certificate of a reissued order is found. A certificate the member has
// not (another member's looks the same) gives an error that matches
// ErrNoSuchCertificate.
func (c *Client) CertificateCheck(ctx context.Context, key CertificateKey) (*CertificateCheck, error) {
	req := map[string]any{}
	switch {
	case key.SerialNumber != "" && key.Thumbprint == "":
		req["serial_number"] = key.SerialNumber
	case key.Thumbprint != "" && key.SerialNumber == "":
		req["thumbprint"] = key.Thumbprint
	default:
		return nil, errors.New("client: CertificateCheck needs a serial number or a thumbprint, one of the two")
	}
	raw, err := c.call(ctx, "CertificateCheck", req)
	if err != nil {
		return nil, err
	}
	r := &CertificateCheck{Raw: raw}
	if err := json.Unmarshal(raw, r); err != nil || r.OrderID <= 0 {
		return nil, &HTTPError{Status: http.StatusOK, Body: snippet(raw), Err: errors.New("no orderId in the answer")}
	}
	return r, nil
}
