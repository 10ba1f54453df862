package client

import (
	"encoding/json"

	"github.com/certorder/certorder"
)

// The OrderInfo answer's types (spec sections 2.2 to 2.5). They are the
// root package's, which the service's import checks documents with, so the
// client reads whatever the service accepts.
type (
	// Order is the OrderInfo answer (spec section 2.2). Fields the answer
	// lacks stay zero; fields this package does not know are ignored. Raw
	// is the answer as the service sent it.
	Order = certorder.OrderInfo
	// Certificate is the certificate of an order (spec section 2.3).
	Certificate = certorder.Certificate
	// CertValidity is the certificate period; which members appear varies.
	CertValidity = certorder.CertValidity
	// CACert names the issuing CA certificate.
	CACert = certorder.CACert
	// Product is the product of an order (spec section 2.4).
	Product = certorder.Product
	// APIKey describes the key that placed the order (spec section 2.5).
	APIKey = certorder.APIKey
	// Int is an integer that may arrive as a JSON number or as a string of
	// digits; Valid is false when the value was null or absent.
	Int = certorder.Int
	// String is a string that may arrive as a JSON number (user_id).
	String = certorder.String
	// Names is dns_names: an array of strings, or a comma-separated string.
	Names = certorder.Names
	// Time is a date or date-time: Raw as sent, Time when it parsed.
	Time = certorder.Time
)

// Renewal is the RenewCheck answer.
type Renewal struct {
	OrderID        Int `json:"orderId"`
	RenewedOrderID Int `json:"renewed_orderId"`

	Raw json.RawMessage `json:"-"`
}
