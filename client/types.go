package client

// The OrderInfo answer's types (spec sections 2.2 to 2.5). The service's
// import checks every document it accepts against the spec's types
// (internal/orderdoc), and its tests decode what it accepts with these, so
// the client (and the web page, which reads with them too) reads whatever
// the service accepts.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
)

// Order is the OrderInfo answer, the order object (spec section 2.2).
// Fields the answer lacks stay zero; fields this package does not know are
// ignored. Raw is the answer as the service sent it (the web page, which
// reads a stored document, leaves it empty).
type Order struct {
	OrderID                int64       `json:"OrderId"`
	Certificate            Certificate `json:"certificate"`
	Status                 string      `json:"status"`
	IsRenewed              bool        `json:"is_renewed"`
	WasRenewedByOrderID    Int         `json:"was_renewed_by_order_id"`
	DateCreated            Time        `json:"date_created"`
	DateIssued             Time        `json:"date_issued"`
	ValidityYears          Int         `json:"validity_years"`
	OrderValidFrom         Time        `json:"order_valid_from"`
	OrderValidTill         Time        `json:"order_valid_till"`
	Product                Product     `json:"product"`
	PurchasedDNSNames      Int         `json:"purchased_dns_names"`
	PurchasedWildcardNames Int         `json:"purchased_wildcard_names"`
	APIKey                 APIKey      `json:"api_key"`

	Raw json.RawMessage `json:"-"`
}

// Issued reports whether the order object carries a certificate's
// valid_till: false for an order still awaiting issuance.
func (o *Order) Issued() bool { return o.Certificate.ValidTill.Raw != "" }

// Lifecycle is what the order's next step depends on
// (certorder.Windows.Next). renewal is the OrderInfo answer of the order
// that renewed it, nil when there is none or the service does not give it
// (a renewal then counts as not issued yet).
func (o *Order) Lifecycle(renewal *Order) certorder.Lifecycle {
	l := certorder.Lifecycle{Status: o.Status, ValidFrom: o.Certificate.ValidFrom.Raw, ValidTill: o.Certificate.ValidTill.Raw,
		PlanTill: o.OrderValidTill.Raw}
	if o.IsRenewed {
		l.RenewedBy = o.WasRenewedByOrderID.Value
		var status, till string
		if renewal != nil {
			status, till = renewal.Status, renewal.Certificate.ValidTill.Raw
		}
		l.Renewal = certorder.RenewalStateOf(l.RenewedBy, status, till)
	}
	return l
}

// Ended reports whether the order is canceled or rejected (certorder.OrderEnded).
func (o *Order) Ended() bool { return certorder.OrderEnded(o.Status) }

// Certificate is the certificate of an order (spec section 2.3).
type Certificate struct {
	ID                     Int           `json:"id"`
	Thumbprint             string        `json:"thumbprint"`
	SerialNumber           string        `json:"serial_number"`
	CommonName             string        `json:"common_name"`
	DNSNames               Names         `json:"dns_names"`
	Status                 string        `json:"status"`
	DateCreated            Time          `json:"date_created"`
	DateIssued             Time          `json:"date_issued"`
	ValidFrom              Time          `json:"valid_from"`
	ValidTill              Time          `json:"valid_till"`
	DaysRemaining          Int           `json:"days_remaining"`
	CertValidity           *CertValidity `json:"cert_validity"` // nil when absent
	CSR                    string        `json:"csr"`
	IsRSASSAPSS            bool          `json:"is_rsassa_pss"`
	SignatureHash          string        `json:"signature_hash"`
	ProfileOption          *string       `json:"profile_option"` // nil when absent
	KeySize                Int           `json:"key_size"`
	CACert                 CACert        `json:"ca_cert"`
	UserID                 String        `json:"user_id"`
	ReceiptID              Int           `json:"receipt_id"`
	PurchasedDNSNames      Int           `json:"purchased_dns_names"`
	PurchasedWildcardNames Int           `json:"purchased_wildcard_names"`
}

// CertValidity is the certificate period; which members appear varies.
type CertValidity struct {
	Years                Int  `json:"years"`
	Days                 Int  `json:"days"`
	CustomExpirationDate Time `json:"custom_expiration_date"`
}

// CACert names the issuing CA certificate.
type CACert struct {
	ID   String `json:"id"`
	Name string `json:"name"`
}

// Product is the product of an order (spec section 2.4).
type Product struct {
	NameID      string `json:"name_id"`
	Name        string `json:"name"`
	Type        string `json:"type"`
	CSRRequired bool   `json:"csr_required"`
}

// APIKey describes the key that placed the order (spec section 2.5).
type APIKey struct {
	Name    string  `json:"name"`
	KeyType string  `json:"key_type"`
	URLMask *string `json:"url_mask"` // nil when absent
}

// Int is an integer that may arrive as a JSON number or as a string of
// digits. Valid is false when the value was null or absent.
type Int struct {
	Value int64
	Valid bool
}

// UnmarshalJSON accepts 12, "12" and null.
func (n *Int) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Int{}
		return nil
	}
	text := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
		text = strings.TrimSpace(text)
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer: %s", b)
	}
	*n = Int{Value: v, Valid: true}
	return nil
}

// MarshalJSON writes the number, or null.
func (n Int) MarshalJSON() ([]byte, error) {
	if !n.Valid {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, n.Value, 10), nil
}

func (n Int) String() string {
	if !n.Valid {
		return ""
	}
	return strconv.FormatInt(n.Value, 10)
}

// String is a string that may arrive as a JSON number (user_id, for one):
// the number's text is kept as it was sent.
type String string

// UnmarshalJSON accepts "abc", 123 and null.
func (s *String) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*s = ""
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = String(v)
	default:
		var num json.Number
		if err := json.Unmarshal(b, &num); err != nil {
			return fmt.Errorf("not a string or number: %s", b)
		}
		*s = String(num)
	}
	return nil
}

// Names is dns_names: an array of strings. The spec's table calls it a
// string, so a single string (names separated by commas or spaces) is
// accepted too.
type Names []string

// UnmarshalJSON accepts ["a","b"], "a, b" and null.
func (n *Names) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*n = strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
		return nil
	}
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return err
	}
	*n = names
	return nil
}

// Time is a date or date-time of the answer: Raw is the text as sent, Time
// its value when it parsed as ISO 8601 with an offset or as YYYY-MM-DD
// (midnight UTC). Text in another form is kept in Raw and leaves Time zero,
// rather than failing the whole answer.
type Time struct {
	time.Time
	Raw string
}

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05-0700", "2006-01-02 15:04:05-07:00", "2006-01-02"}

// UnmarshalJSON accepts a string or null.
func (t *Time) UnmarshalJSON(b []byte) error {
	*t = Time{}
	if string(b) == "null" {
		return nil
	}
	if err := json.Unmarshal(b, &t.Raw); err != nil {
		return fmt.Errorf("date is not a string: %s", b)
	}
	for _, layout := range timeLayouts {
		if v, err := time.Parse(layout, t.Raw); err == nil {
			t.Time = v
			break
		}
	}
	return nil
}

// MarshalJSON writes the text as it was received.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.Raw == "" && t.Time.IsZero() {
		return []byte("null"), nil
	}
	if t.Raw == "" {
		return json.Marshal(t.Time.Format(time.RFC3339))
	}
	return json.Marshal(t.Raw)
}

func (t Time) String() string { return t.Raw }

// Renewal is the RenewCheck answer.
type Renewal struct {
	OrderID        Int `json:"orderId"`
	RenewedOrderID Int `json:"renewed_orderId"`

	Raw json.RawMessage `json:"-"`
}
