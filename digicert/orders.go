package digicert

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"strconv"
	"strings"
)

// MaxLimit is the most orders one List orders page may hold.
const MaxLimit = 1000

// ListOptions selects a page of List orders
// (GET order/certificate, "List orders" page).
type ListOptions struct {
	Offset int // index of the first order; default 0
	Limit  int // orders per page, 1 to MaxLimit; 0 means MaxLimit
	// Filters are sent as filters[name]=value, e.g. "is_renewed": "1",
	// "container_id": "12345", "date_created": DateRange(from, to).
	Filters map[string]string
	// Sort is a property to sort by, "-" before it for descending, several
	// separated by commas, e.g. "id" or "-date_created".
	Sort string
}

// OrderList is one page of List orders.
type OrderList struct {
	Orders []OrderSummary `json:"orders"`
	Page   Page           `json:"page"`
}

// Page is the paging information of a list answer.
type Page struct {
	Total  int `json:"total"`
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// OrderSummary is an order as List orders gives it.
type OrderSummary struct {
	ID          int64              `json:"id"`
	Certificate CertificateSummary `json:"certificate"`
	Status      string             `json:"status"`
	IsRenewed   bool               `json:"is_renewed"`
	// RenewedOrderID is not in the documented List orders answer; it is 0
	// unless DigiCert sends it. Order info has it.
	RenewedOrderID int64     `json:"renewed_order_id"`
	DateCreated    string    `json:"date_created"` // ISO 8601, UTC
	ValidityYears  int       `json:"validity_years"`
	Container      Container `json:"container"`
	Product        Product   `json:"product"`
}

// CertificateSummary is the certificate of an OrderSummary.
type CertificateSummary struct {
	ID         int64    `json:"id"`
	CommonName string   `json:"common_name"`
	DNSNames   []string `json:"dns_names"`
	ValidTill  string   `json:"valid_till"` // yyyy-MM-dd; empty until issued
}

// Container is a CertCentral container: a division of the account.
type Container struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Product names the product of an order.
type Product struct {
	NameID      string `json:"name_id"`
	Name        string `json:"name"`
	Type        string `json:"type"`
	CSRRequired bool   `json:"csr_required"`
}

// Order is an Order info answer: the fields a sync needs, typed, and Raw,
// the answer as DigiCert sent it (SpecOrder reads Raw).
type Order struct {
	ID             int64            `json:"id"`
	Certificate    OrderCertificate `json:"certificate"`
	Status         string           `json:"status"`
	IsRenewal      bool             `json:"is_renewal"`
	IsRenewed      bool             `json:"is_renewed"`
	RenewedOrderID int64            `json:"renewed_order_id"` // 0 means none
	DateCreated    string           `json:"date_created"`
	Container      Container        `json:"container"`
	Product        Product          `json:"product"`

	Raw json.RawMessage `json:"-"`
}

// OrderCertificate is the certificate of an Order.
type OrderCertificate struct {
	ID         int64    `json:"id"`
	CommonName string   `json:"common_name"`
	DNSNames   []string `json:"dns_names"`
	DateIssued string   `json:"date_issued"` // empty until issued
	ValidFrom  string   `json:"valid_from"`
	ValidTill  string   `json:"valid_till"`
}

// ParseOrder reads an Order info answer, for instance one stored earlier.
func ParseOrder(raw []byte) (*Order, error) {
	var o Order
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("digicert: order info: %w", err)
	}
	if o.ID <= 0 {
		return nil, errors.New("digicert: order info: no positive id")
	}
	o.Raw = append(json.RawMessage(nil), raw...)
	return &o, nil
}

// OrderInfo fetches one order (GET order/certificate/{id}, "Order info"
// page): the typed fields and the raw answer.
func (c *Client) OrderInfo(ctx context.Context, id int64) (*Order, error) {
	if id <= 0 {
		return nil, fmt.Errorf("digicert: order info: order ID %d is not positive", id)
	}
	var raw json.RawMessage
	op := "order info " + itoa(id)
	if err := c.get(ctx, op, "order/certificate/"+itoa(id), nil, &raw); err != nil {
		return nil, err
	}
	o, err := ParseOrder(raw)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, op)
	}
	if o.ID != id {
		return nil, fmt.Errorf("digicert: %s: the answer is order %d", op, o.ID)
	}
	return o, nil
}

// ListOrders fetches one page of orders (GET order/certificate, "List
// orders" page).
func (c *Client) ListOrders(ctx context.Context, opts ListOptions) (*OrderList, error) {
	q, err := opts.query()
	if err != nil {
		return nil, err
	}
	var list OrderList
	op := fmt.Sprintf("list orders (offset %d)", opts.Offset)
	if err := c.get(ctx, op, "order/certificate", q, &list); err != nil {
		return nil, err
	}
	if limit := cmp.Or(opts.Limit, MaxLimit); len(list.Orders) > limit {
		return nil, fmt.Errorf("digicert: %s: %w: a page of %d orders, over the %d asked", op, ErrTooLarge, len(list.Orders), limit)
	}
	return &list, nil
}

// OrderPages walks List orders page by page from opts.Offset, so a caller
// can store each page at once. Without a Sort it sorts by id, so that
// orders created during the walk land on later pages instead of shifting
// earlier ones. After an error it yields nothing more.
func (c *Client) OrderPages(ctx context.Context, opts ListOptions) iter.Seq2[*OrderList, error] {
	return func(yield func(*OrderList, error) bool) {
		if opts.Sort == "" {
			opts.Sort = "id"
		}
		for pages := 0; ; pages++ {
			if pages >= c.maxPages {
				yield(nil, fmt.Errorf("digicert: list orders: %w: more than %d pages in one walk (offset %d); stopped reading",
					ErrTooLarge, c.maxPages, opts.Offset))
				return
			}
			page, err := c.ListOrders(ctx, opts)
			if err != nil {
				yield(nil, err)
				return
			}
			if len(page.Orders) == 0 {
				return
			}
			if !yield(page, nil) {
				return
			}
			opts.Offset += len(page.Orders)
			// The page object says when to stop; without one, a page shorter
			// than the limit is the last.
			limit := page.Page.Limit
			if limit <= 0 {
				limit = cmp.Or(opts.Limit, MaxLimit)
			}
			if page.Page.Total > 0 && opts.Offset >= page.Page.Total ||
				page.Page.Total == 0 && len(page.Orders) < limit {
				return
			}
		}
	}
}

func (o ListOptions) query() (url.Values, error) {
	if o.Offset < 0 {
		return nil, fmt.Errorf("digicert: list orders: offset %d is negative", o.Offset)
	}
	limit := o.Limit
	if limit == 0 {
		limit = MaxLimit
	}
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("digicert: list orders: limit %d is not between 1 and %d", o.Limit, MaxLimit)
	}
	q := url.Values{}
	q.Set("offset", strconv.Itoa(o.Offset))
	q.Set("limit", strconv.Itoa(limit))
	if o.Sort != "" {
		q.Set("sort", o.Sort)
	}
	for name, value := range o.Filters {
		if name == "" || strings.ContainsAny(name, "[]&=") {
			return nil, fmt.Errorf("digicert: list orders: filter name %q is not a property name", name)
		}
		q.Set("filters["+name+"]", value)
	}
	return q, nil
}
