package certorder

import (
	"strings"
	"time"
)

// Order is one certificate order as stored.
//
// Doc is the document as the CA returned it and the operator imported it,
// compacted, every value byte for byte as imported (so numbers sent as strings
// stay strings), minus the fields derived at answer time: is_renewed,
// was_renewed_by_order_id and certificate.days_remaining. CertEnd is the
// offset in Doc of the certificate object's closing brace, where
// wire.AppendOrderInfo splices days_remaining in, so that an answer is one
// read and one write of the document. Its meaning is tied to the compaction
// orderdoc.Parse does: DocFormat says which, so a future change to either can
// migrate stored rows.
type Order struct {
	ID       int64
	MemberID int64
	Member   string // member name
	Status   string // order status, an open set of strings
	// Certificate is the current certificate. orderdoc.Parse fills in every
	// field; a store's reads fill in CommonName, ValidFrom and ValidTill
	// (ValidTill is "" while the order is not issued).
	Certificate Certificate
	PlanTill    string // order_valid_till, the plan's end, YYYY-MM-DD; "" when not stated
	RenewedBy   int64  // the order that renewed this one; 0 if none
	Renews      int64  // filled in by ListOrders only: the lowest-numbered order this one renewed; 0 if none
	// Renewal is filled in by FindOrder and ListOrders: how far the order
	// that renewed this one has come.
	Renewal RenewalState
	Doc     []byte
	CertEnd int
}

// Lifecycle is what the order's next step depends on (Windows.Next).
func (o *Order) Lifecycle() Lifecycle {
	return Lifecycle{Status: o.Status, ValidFrom: o.Certificate.ValidFrom, ValidTill: o.Certificate.ValidTill,
		PlanTill: o.PlanTill, RenewedBy: o.RenewedBy, Renewal: o.Renewal}
}

// DocFormat is the version of the stored document's layout (see Order).
// Stores record it with each row and refuse to read a row of another.
const DocFormat = 1

// MaxOrderBytes bounds one order document at import. A real order is a
// few KiB (its CSR is the largest part); a larger one is refused, so that
// no request can make the service read and send megabytes.
const MaxOrderBytes = 256 << 10

// DateLayout is the layout of the spec's YYYY-MM-DD dates.
const DateLayout = "2006-01-02"

// DaysRemaining is the number of days from now's date (UTC) to validTill,
// negative once it has passed. validTill is checked on import; should it not
// parse, 0 is returned. It runs on every OrderInfo answer, so the usual
// date is read without time.Parse. It is exact for every date the format
// allows, 0000-01-01 to 9999-12-31: days are counted on the civil
// calendar, never through a time.Duration, whose range (±106751 days) it
// was once clamped to.
func DaysRemaining(validTill string, now time.Time) int {
	y, m, d := now.UTC().Date()
	if ty, tm, td, ok := plainDate(validTill); ok {
		return civilDays(ty, tm, td) - civilDays(y, int(m), d)
	}
	till, err := time.Parse(DateLayout, validTill)
	if err != nil {
		return 0
	}
	ty, tm, td := till.Date()
	return civilDays(ty, int(tm), td) - civilDays(y, int(m), d)
}

// plainDate reads YYYY-MM-DD, a real date; false for anything else.
func plainDate(s string) (y, m, d int, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	num := func(t string) (int, bool) {
		n := 0
		for i := 0; i < len(t); i++ {
			if t[i] < '0' || t[i] > '9' {
				return 0, false
			}
			n = n*10 + int(t[i]-'0')
		}
		return n, true
	}
	y, ok1 := num(s[:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(m, y) {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// civilDays is the number of days from 1970-01-01 to the date
// (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
func civilDays(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// SearchText is what an order search matches: the common name and DNS
// names, lower case, one a line. Stores keep it beside the order.
func (o *Order) SearchText() string {
	return strings.ToLower(strings.Join(append([]string{o.Certificate.CommonName}, o.Certificate.DNSNames...), "\n"))
}
