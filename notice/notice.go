// Package notice says members' order events in words, for people: the
// readable line of an event (an e-mail's subject, a chat room's message),
// the e-mails of a notice (one event, a day's digest, an address's
// confirmation; plain text and HTML; English and Japanese), the signed
// links of a confirmation and an unsubscribe, and the check of a new
// address. Sending is package mailer's; the store keeps the addresses and
// the jobs of the queue.
package notice

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/printable"
)

// Languages are the messages' languages, the first the default.
var Languages = []string{"en", "ja"}

// Texts says events in words: what Line and Compose need besides the
// events and their orders.
type Texts struct {
	// PublicURL is the service's base URL as members reach it (serve
	// --public-url): every link of a message starts with it.
	PublicURL string
	// Windows name an order's next step; zero: certorder.DefaultWindows.
	Windows certorder.Windows
}

// s is the message key in lang (English for a language it does not know).
func s(lang, key string, args ...any) string {
	cat, ok := catalogues[lang]
	if !ok {
		cat = catalogues["en"]
	}
	return fmt.Sprintf(cat[key], args...)
}

// iso leaves a YYYY-MM-DD date as it is: a message's dates read the same in
// every language and every reader's locale.
func iso(d string) string { return d }

// StepPhrase is the message key and arguments that say next step n in
// words, with day formatting its date: the member page and the notices say
// a step alike (server/web's catalogue, and this package's).
func StepPhrase(n certorder.NextStep, day func(string) string) (string, []any) {
	switch n.Step {
	case certorder.StepReissue:
		return "next.reissue", []any{day(n.Due)}
	case certorder.StepRenew:
		return "next.renew", []any{day(n.Due)}
	case certorder.StepIssueRenewal:
		return "next.issue_renewal", []any{n.Renewal, day(n.Due)}
	case certorder.StepRenewed:
		return "next.renewed", []any{n.Renewal}
	case certorder.StepEnded:
		return "next.ended", nil
	}
	switch {
	case n.Missing == "certificate.valid_till":
		return "next.awaiting_issuance", nil
	case n.Renewal != 0:
		return "next.renewal_pending", []any{n.Renewal}
	case n.Missing == "order_valid_till" && n.Due != "":
		return "next.plan_unknown_due", []any{day(n.Due)}
	case n.Missing == "order_valid_till":
		return "next.plan_unknown", nil
	}
	return "next.none", nil
}

// eventData is what the order events' data hold, every type's fields in one.
type eventData struct {
	OrderID        int64  `json:"order_id"`
	RenewedOrderID int64  `json:"renewed_order_id"`
	Status         string `json:"status"`
	PreviousStatus string `json:"previous_status"`
	ValidTill      string `json:"valid_till"`
	OrderValidTill string `json:"order_valid_till"`
	Certificate    struct {
		ValidTill string `json:"valid_till"`
	} `json:"certificate"`
}

// OrderID is the order an event is about, 0 if its data name none.
func OrderID(ev certorder.Event) int64 {
	var d eventData
	json.Unmarshal(ev.Data, &d) // the outbox's data are the events' own JSON
	return d.OrderID
}

// OrderFinder reads the order an event is about, to say it as it is now
// (the webhook worker's chat lines, the mailer's notices).
type OrderFinder interface {
	FindOrder(ctx context.Context, id int64) (*certorder.Order, error)
}

// Told is one event ready to be said: the event, its order as it is now
// (nil when the store has it no more), and the time it is said at.
type Told struct {
	Event certorder.Event
	Order *certorder.Order
	Now   time.Time
}

func (t Texts) windows() certorder.Windows {
	if t.Windows == (certorder.Windows{}) {
		return certorder.DefaultWindows
	}
	return t.Windows
}

// maxValue bounds each value from elsewhere in a message (a common name,
// a status): a DNS name is at most 253 bytes, a common name 64 characters.
const maxValue = 100

// maxLine bounds a line as a whole: a subject is one (RFC 5322 allows 998
// octets a line; the encoded subject stays well within).
const maxLine = 400

// escaper is one output's rule for the values from elsewhere in its text.
type escaper func(string) string

// mailValue is the rule of an e-mail (its subject, both parts): one
// printable line, bounded (internal/printable).
func mailValue(s string) string { return printable.Cut(s, maxValue) }

// chatValue is the rule of a chat room's message: that, and no mention,
// link or image of its own.
func chatValue(s string) string { return printable.Chat(s, maxValue) }

// Line is the one readable line of an event in lang: what happened to the
// order (its number and common name), then what to do, by when, each a
// sentence ("Order 10001 (shop.example.com) was renewed as order 10002.
// Get renewal 10002 issued by 2027-01-10."). It is a notice's subject and a
// digest's item. Every value from elsewhere is escaped and bounded, and the
// line is one line of at most maxLine bytes.
func (t Texts) Line(lang string, e Told) string { return t.line(lang, e, mailValue) }

func (t Texts) line(lang string, e Told, esc escaper) string {
	var d eventData
	json.Unmarshal(e.Event.Data, &d)
	start, within := s(lang, "order", d.OrderID), s(lang, "order.in", d.OrderID)
	if e.Order != nil && e.Order.Certificate.CommonName != "" {
		cn := esc(e.Order.Certificate.CommonName)
		start, within = s(lang, "order.named", d.OrderID, cn), s(lang, "order.named.in", d.OrderID, cn)
	}
	var what string
	switch e.Event.Type {
	case certorder.EventOrderRenewed:
		what = s(lang, "event.order.renewed", start, d.RenewedOrderID)
	case certorder.EventOrderStatusChanged:
		what = s(lang, "event.order.status_changed", start, esc(d.Status))
	case certorder.EventOrderReissued:
		what = s(lang, "event.order.reissued", start)
	case certorder.EventOrderExpiring:
		what = s(lang, "event.order.expiring", within, esc(d.ValidTill))
	case certorder.EventOrderPlanEnding:
		what = s(lang, "event.order.plan_ending", within, esc(d.OrderValidTill))
	default:
		what = s(lang, "event.other", start, esc(e.Event.Type))
	}
	return certorder.Cut(s(lang, "line", what, t.step(lang, "line.", e, d, esc)), maxLine)
}

// step says the order's next step now (prefix "line." for the sentence a
// line ends with, "" for the page's phrase); without the order, the step
// the event's data name (order.expiring, order.plan_ending), else none.
func (t Texts) step(lang, prefix string, e Told, d eventData, esc escaper) string {
	var n certorder.NextStep
	if e.Order != nil {
		n = t.windows().Next(e.Order.Lifecycle(), e.Now)
	} else {
		n = t.windows().Next(certorder.Lifecycle{Status: "issued", ValidTill: d.ValidTill, PlanTill: d.OrderValidTill}, e.Now)
	}
	key, args := StepPhrase(n, func(day string) string { return esc(iso(day)) })
	return s(lang, prefix+key, args...)
}

// what is the sentence of the body that says what happened.
func what(lang string, ev certorder.Event, d eventData, esc escaper) string {
	switch ev.Type {
	case certorder.EventOrderRenewed:
		return s(lang, "what.order.renewed", d.OrderID, d.RenewedOrderID)
	case certorder.EventOrderStatusChanged:
		return s(lang, "what.order.status_changed", d.OrderID, esc(d.PreviousStatus), esc(d.Status))
	case certorder.EventOrderReissued:
		return s(lang, "what.order.reissued", d.OrderID, esc(d.Certificate.ValidTill))
	case certorder.EventOrderExpiring:
		return s(lang, "what.order.expiring", d.OrderID, esc(d.ValidTill))
	case certorder.EventOrderPlanEnding:
		return s(lang, "what.order.plan_ending", d.OrderID, esc(d.OrderValidTill))
	}
	return esc(ev.Type)
}

// link is the public URL of path, query q (nil: none).
func (t Texts) link(path string, q url.Values) string {
	u := strings.TrimSuffix(t.PublicURL, "/") + path
	if q != nil {
		u += "?" + q.Encode()
	}
	return u
}

// OrderURL is the member page of an order.
func (t Texts) OrderURL(id int64) string { return t.link("/orders/"+strconv.FormatInt(id, 10), nil) }

// NoticesURL is the member page of the notice addresses.
func (t Texts) NoticesURL() string { return t.link("/notices", nil) }

// UnsubscribeURL is the one-click unsubscribe link of an address.
func (t Texts) UnsubscribeURL(a certorder.NoticeAddress) string {
	return t.link("/notices/unsubscribe", url.Values{"t": {UnsubscribeToken(a)}})
}

// ConfirmURL is the confirmation link of an address.
func (t Texts) ConfirmURL(a certorder.NoticeAddress) string {
	return t.link("/notices/confirm", url.Values{"t": {ConfirmToken(a)}})
}

// BlockURL is the link in address a's confirmation that refuses every
// later confirmation to its recipient.
func (t Texts) BlockURL(a certorder.NoticeAddress) string {
	return t.link("/notices/block", url.Values{"t": {BlockToken(a)}})
}

// ChatLine is an event for a chat room: the line, its values escaped for
// a chat room (printable.Chat), and the order page's link.
func (t Texts) ChatLine(e Told) string {
	return t.line("en", e, chatValue) + " " + t.OrderURL(OrderID(e.Event))
}
