package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/wire"
)

// Expiry is what the pages say of a certificate's end.
type Expiry string

// The expiry states.
const (
	Renewed  Expiry = "renewed"  // replaced by an issued renewal: never expired or expiring
	Expired  Expiry = "expired"  // past its end, with no issued renewal
	Expiring Expiry = "expiring" // within its reissue window (certorder.Windows.ReissueWindow)
	Valid    Expiry = "valid"
	Pending  Expiry = "pending" // not issued yet: no certificate, no end
	Ended    Expiry = "ended"   // canceled or rejected before issuance: there will be no certificate
)

// expiryOf is the one rule for every page and the CSV, with the days
// remaining (0 without a certificate): an order whose renewal is issued is
// never flagged as expired or expiring, whatever its days (one whose
// renewal is still pending is: its certificate is the one in use); one
// without certificate.valid_till has no end to count to.
func (h *handler) expiryOf(o *certorder.Order, now time.Time) (Expiry, int) {
	c := &o.Certificate
	days := 0
	if c.ValidTill != "" {
		days = certorder.DaysRemaining(c.ValidTill, now)
	}
	switch {
	case o.Renewal == certorder.RenewalIssued:
		return Renewed, days
	case c.ValidTill == "" && certorder.OrderEnded(o.Status):
		return Ended, 0
	case c.ValidTill == "":
		return Pending, 0
	case days < 0:
		return Expired, days
	case days <= h.cfg.Windows.ReissueWindow(c.ValidFrom, c.ValidTill):
		return Expiring, days
	}
	return Valid, days
}

// expiryText says a certificate's expiry in words, never colour alone.
func expiryText(cat *catalogue, e Expiry, days int) string {
	switch e {
	case Pending:
		return cat.S("expiry.pending")
	case Ended:
		return cat.S("expiry.ended")
	case Renewed:
		return cat.S("expiry.renewed")
	case Expired:
		return cat.S("expiry.expired", -days)
	case Expiring:
		return cat.S("expiry.expiring", days)
	}
	return cat.S("expiry.valid", days)
}

// nextStepText says an order's next step in words, with its date: what
// the member does next, and by when.
func nextStepText(cat *catalogue, n certorder.NextStep) string {
	key, args := notice.StepPhrase(n, cat.Day)
	return cat.S(key, args...)
}

// step is an order's next step as the pages show it.
type step struct {
	certorder.NextStep
	Text    string
	Overdue bool
}

func (h *handler) stepOf(cat *catalogue, o *certorder.Order, now time.Time) step {
	n := h.cfg.Windows.Next(o.Lifecycle(), now)
	return step{NextStep: n, Text: nextStepText(cat, n), Overdue: n.Overdue(now)}
}

// row is one order of the orders page.
type row struct {
	ID         int64
	CommonName string
	Product    string
	Status     string
	ValidTill  string // YYYY-MM-DD, the certificate's end
	PlanTill   string // YYYY-MM-DD, the plan's end
	Days       int
	Expiry     Expiry
	ExpiryText string
	Next       step
	RenewedBy  int64
	Current    int64 // the current order of a renewed order's chain
	Renews     int64 // the order this one renewed
}

// orderView is the order page's order: the domain order (its number,
// status, plan, current certificate, renewal), and what the page shows of
// the stored document beyond it, read from that document once into the
// API's value types (client.Time, client.Int: the values as imported, a
// number perhaps sent as a string). It is never an OrderInfo answer
// encoded and decoded again; days_remaining, which only the answer
// derives, the page says in its own words (Expiry).
type orderView struct {
	*certorder.Order       `json:"-"`         // the document's keys never write the domain order
	Certificate            client.Certificate `json:"certificate"`
	DateCreated            client.Time        `json:"date_created"`
	DateIssued             client.Time        `json:"date_issued"`
	ValidityYears          client.Int         `json:"validity_years"`
	OrderValidFrom         client.Time        `json:"order_valid_from"`
	OrderValidTill         client.Time        `json:"order_valid_till"`
	Product                client.Product     `json:"product"`
	PurchasedDNSNames      client.Int         `json:"purchased_dns_names"`
	PurchasedWildcardNames client.Int         `json:"purchased_wildcard_names"`
	APIKey                 client.APIKey      `json:"api_key"`
}

// newOrderView reads o's document into its view.
func newOrderView(o *certorder.Order) (*orderView, error) {
	v := &orderView{Order: o}
	if err := json.Unmarshal(o.Doc, v); err != nil {
		return nil, fmt.Errorf("order %d: %w", o.ID, err)
	}
	return v, nil
}

// IsRenewed and WasRenewedByOrderID are the renewal as OrderInfo derives it
// (wire.AppendOrderInfo), from the domain order.
func (v *orderView) IsRenewed() bool { return v.RenewedBy != 0 }

func (v *orderView) WasRenewedByOrderID() client.Int {
	return client.Int{Value: v.RenewedBy, Valid: v.RenewedBy != 0}
}

// productName is the product's name of o's document, for a row of the
// list: the one field the rows show that the domain order does not hold.
func productName(o *certorder.Order) (string, error) {
	var d struct {
		Product struct {
			Name string `json:"name"`
		} `json:"product"`
	}
	if err := json.Unmarshal(o.Doc, &d); err != nil {
		return "", fmt.Errorf("order %d: %w", o.ID, err)
	}
	return d.Product.Name, nil
}

// makeRow is an order as the list and the CSV show it. Current is left
// for the caller: it costs a read.
func (h *handler) makeRow(cat *catalogue, o *certorder.Order) (row, error) {
	product, err := productName(o)
	if err != nil {
		return row{}, err
	}
	now := h.cfg.Now()
	rw := row{ID: o.ID, CommonName: o.Certificate.CommonName, Product: product, Status: o.Status,
		ValidTill: o.Certificate.ValidTill, PlanTill: o.PlanTill, RenewedBy: o.RenewedBy, Renews: o.Renews}
	rw.Expiry, rw.Days = h.expiryOf(o, now)
	rw.ExpiryText = expiryText(cat, rw.Expiry, rw.Days)
	rw.Next = h.stepOf(cat, o, now)
	return rw, nil
}

// currentOf is the newest order of the renewal chain through id, within
// the member's orders.
func (h *handler) currentOf(ctx context.Context, memberID, id int64) (int64, error) {
	chain, err := h.store.RenewalChain(ctx, memberID, id)
	if err != nil {
		return 0, err
	}
	return chain[len(chain)-1].ID, nil
}

type sortOption struct {
	Value, Label string
	Selected     bool
}

// listFilter is the orders list's filter, from the URL: what the page,
// the CSV and the timeline share.
type listFilter struct {
	Query       string
	Sort        string
	ShowRenewed bool
	Page        int
}

// sorts are the orders page's sort options, by their value in the URL.
var sorts = []struct {
	value, label string
	sort         certorder.OrderSort
}{
	{"order", "sort.order", certorder.SortByID},
	{"expiry", "sort.expiry", certorder.SortByExpiry},
	{"-expiry", "sort.expiry_desc", certorder.SortByExpiryDesc},
}

// readFilter reads the filter from the URL and makes the store's query.
func readFilter(r *http.Request, memberID int64) (listFilter, certorder.OrderQuery) {
	q := r.URL.Query()
	f := listFilter{Query: certorder.Cut(strings.TrimSpace(q.Get("q")), 200), Sort: sorts[0].value,
		ShowRenewed: q.Get("renewed") == "1"}
	f.Page, _ = strconv.Atoi(q.Get("page"))
	oq := certorder.OrderQuery{MemberID: memberID, Search: f.Query, HideRenewed: !f.ShowRenewed}
	for _, o := range sorts {
		if o.value == q.Get("sort") {
			f.Sort, oq.Sort = o.value, o.sort
		}
	}
	return f, oq
}

// values is the filter as URL parameters, with a page.
func (f listFilter) values(page int) url.Values {
	v := url.Values{"sort": {f.Sort}}
	if page > 0 {
		v.Set("page", strconv.Itoa(page))
	}
	if f.Query != "" {
		v.Set("q", f.Query)
	}
	if f.ShowRenewed {
		v.Set("renewed", "1")
	}
	return v
}

type ordersData struct {
	listFilter
	Sorts            []sortOption
	Rows             []row
	Total            int
	Pages            int
	PrevURL, NextURL string
	CSVURL           string
}

func (h *handler) orders(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	cat := h.cat(r)
	f, oq := readFilter(r, s.MemberID)
	data := ordersData{listFilter: f}
	for _, o := range sorts {
		data.Sorts = append(data.Sorts, sortOption{o.value, cat.S(o.label), o.value == f.Sort})
	}
	var err error
	if data.Total, err = h.store.CountOrders(r.Context(), oq); err != nil {
		h.serverError(w, r, err)
		return
	}
	data.Pages = max(1, (data.Total+h.cfg.PageSize-1)/h.cfg.PageSize)
	data.Page = min(max(data.Page, 1), data.Pages)
	oq.Offset, oq.Limit = (data.Page-1)*h.cfg.PageSize, h.cfg.PageSize
	orders, err := h.store.ListOrders(r.Context(), oq)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	for _, o := range orders {
		rw, err := h.makeRow(cat, o)
		if err == nil && rw.RenewedBy != 0 {
			rw.Current, err = h.currentOf(r.Context(), s.MemberID, o.ID)
		}
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		data.Rows = append(data.Rows, rw)
	}
	if data.Page > 1 {
		data.PrevURL = "/orders?" + f.values(data.Page-1).Encode()
	}
	if data.Page < data.Pages {
		data.NextURL = "/orders?" + f.values(data.Page+1).Encode()
	}
	data.CSVURL = "/orders.csv?" + f.values(0).Encode()
	h.render(w, r, http.StatusOK, "orders", signedIn(view{Title: cat.S("orders.title"), Section: "orders", Data: data}, s))
}

// link is one order of a renewal chain.
type link struct {
	ID        int64
	Status    string // "" when the order is not stored
	ValidTill string
	This      bool // the order the page shows
	Current   bool // the newest of the chain
}

type orderData struct {
	ID         int64
	Order      *orderView
	Next       step
	History    []historyRow // newest first
	Chain      []link
	Current    int64 // the newest order of the chain
	IsCurrent  bool
	Expiry     Expiry
	ExpiryText string
	ACMEURL    string // the directory URL for the newest order, when the operator set a template
	ACMEEnded  bool   // the newest order is canceled or rejected: no URL to give
	// DeployedHost is the host of the command that checks a server
	// serves the current certificate (certorder deployed HOST): shown for
	// the current order of a chain, issued and not ended. The page never
	// connects to it: it would let anyone make the service connect anywhere.
	DeployedHost string
	// DeployedExample: DeployedHost stands for a host the member names
	// (a wildcard certificate's, or HOST when no name would do).
	DeployedExample bool
}

// historyRow is one certificate of the order page's history.
type historyRow struct {
	certorder.Certificate
	Current bool // the order's current certificate
}

func (h *handler) order(w http.ResponseWriter, r *http.Request, s *certorder.Session) {
	cat := h.cat(r)
	id, ok := wire.ParseOrderID([]byte(r.PathValue("id")))
	if !ok {
		h.notFound(w, r, s)
		return
	}
	// The chain is read within the member's orders: another member's order
	// is "not found", exactly like one that does not exist, and never read.
	chain, err := h.store.RenewalChain(r.Context(), s.MemberID, id)
	if errors.Is(err, certorder.ErrNotFound) {
		h.notFound(w, r, s)
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	o, err := h.store.FindOrder(r.Context(), id)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	v, err := newOrderView(o)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data := orderData{ID: id, Order: v, Current: chain[len(chain)-1].ID}
	for i, l := range chain {
		data.Chain = append(data.Chain, link{ID: l.ID, Status: l.Status, ValidTill: l.ValidTill, This: l.ID == id, Current: i == len(chain)-1})
	}
	data.IsCurrent = data.Current == id
	var days int
	now := h.cfg.Now()
	data.Expiry, days = h.expiryOf(o, now)
	data.ExpiryText = expiryText(cat, data.Expiry, days)
	data.Next = h.stepOf(cat, o, now)
	histories, err := h.store.Certificates(r.Context(), []int64{id})
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	hist := histories[id]
	for i := len(hist) - 1; i >= 0; i-- {
		data.History = append(data.History, historyRow{Certificate: hist[i].Certificate, Current: i == len(hist)-1})
	}
	if data.IsCurrent && v.Certificate.ValidTill.Raw != "" && data.Next.Step != certorder.StepEnded {
		data.DeployedHost, data.DeployedExample = DeployedHost(v.Certificate.CommonName, v.Certificate.DNSNames)
		if data.DeployedHost == "" {
			data.DeployedHost, data.DeployedExample = "HOST", true
		}
	}
	if h.cfg.ACMEURLTemplate != "" {
		newest := o
		if data.Current != id {
			if newest, err = h.store.FindOrder(r.Context(), data.Current); err != nil {
				h.serverError(w, r, err)
				return
			}
		}
		if certorder.OrderEnded(newest.Status) {
			data.ACMEEnded = true
		} else {
			data.ACMEURL = ACMEURL(h.cfg.ACMEURLTemplate, data.Current)
		}
	}
	if data.ACMEURL != "" || data.DeployedHost != "" {
		// The copy buttons' script (static/copy.js): this page alone
		// allows the site's own scripts, and no inline one.
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy+"; script-src 'self'")
	}
	h.render(w, r, http.StatusOK, "order", signedIn(view{Title: cat.S("order.title", id), Section: "orders", Data: data}, s))
}
