package notice

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"net/url"
	"strings"
	"text/template"
	"time"

	"github.com/certorder/certorder"
)

// Message is a notice as an e-mail: what package mailer sends.
type Message struct {
	To        string
	Subject   string
	Text      string // the text/plain part
	HTML      string // the text/html part
	MessageID string // without angle brackets; the same on every attempt
	// Unsubscribe is the https link of List-Unsubscribe (RFC 8058's
	// one-click, POSTed to): a confirmation's is its block link.
	Unsubscribe string
}

// body is what both templates write.
type body struct {
	Lang   string
	Intro  []string // paragraphs
	Link   string   // a link on a line of its own (the confirmation's)
	Items  []item   // the events: one, or a digest's
	More   *line    // a digest's events not listed, and the page that has them
	Footer []line   // the why and the links
}

// line is a sentence, and a link after it if URL is set.
type line struct{ Text, URL string }

// item is one event in a message.
type item struct {
	Line   string
	What   string
	Fields [][2]string
	Open   string // "Open the order: URL"
	URL    string
}

//go:embed message.txt
var textSource string

//go:embed message.html
var htmlSource string

var (
	textTemplate = template.Must(template.New("text").Parse(textSource))
	htmlTemplate = htmltemplate.Must(htmltemplate.New("html").Parse(htmlSource))
)

// MaxDigestItems bounds the events a digest lists: a day of a mass
// revocation (tens of thousands of events) is one message of at most this
// many, well under 1 MB, and a link to the page for the rest.
const MaxDigestItems = 100

// Compose makes the e-mail of notice n, its events' orders as they are now
// in e's Order (the same for every Told of a digest), in the address's
// language. A notice of an event has the event's line as its subject. A
// digest of total events (total < len(told): len(told)) lists the first
// MaxDigestItems of told, and says how many more there were and where to
// see the orders: its caller need read no more than that many.
func (t Texts) Compose(n Notice, told []Told, total int) (Message, error) {
	a := n.Address
	lang := a.Lang
	m := Message{To: a.Address, MessageID: t.MessageID(n)}
	b := body{Lang: lang}
	switch n.Kind {
	case KindConfirm:
		// Who asked, and how to refuse: the recipient may never have heard
		// of certorder. The block link is the message's one-click
		// unsubscribe too (RFC 8058): a mail client's button refuses.
		m.Subject = s(lang, "confirm.subject")
		b.Intro = []string{s(lang, "confirm.text", a.Member, t.host(), a.Address), s(lang, "confirm.action", int(ConfirmFor.Hours()))}
		b.Link = t.ConfirmURL(a)
		m.Unsubscribe = t.BlockURL(a)
		b.Footer = []line{{Text: s(lang, "confirm.ignore")}, {Text: s(lang, "confirm.block"), URL: m.Unsubscribe}}
	case KindEvent, KindDigest:
		if len(told) == 0 {
			return Message{}, fmt.Errorf("notice %d: no event to tell", n.ID)
		}
		total = max(total, len(told))
		if n.Kind != KindDigest {
			told = told[:1]
		}
		for _, e := range told[:min(len(told), MaxDigestItems)] {
			b.Items = append(b.Items, t.item(lang, e))
		}
		m.Subject = b.Items[0].Line
		if n.Kind == KindDigest {
			m.Subject = s(lang, "digest.subject", total, a.Member, n.Day)
			b.Intro = []string{s(lang, "digest.intro", certorder.NoticeDailyEvents, a.Member, n.Day, certorder.NoticeDailyEvents)}
			if more := total - len(b.Items); more > 0 {
				b.More = &line{Text: s(lang, "digest.more", more), URL: t.link("/orders", nil)}
			}
		}
		m.Unsubscribe = t.UnsubscribeURL(a)
		b.Footer = []line{{Text: s(lang, "footer.why", a.Address, a.Member)},
			{Text: s(lang, "footer.unsubscribe"), URL: m.Unsubscribe}, {Text: s(lang, "footer.manage"), URL: t.NoticesURL()}}
	default:
		return Message{}, fmt.Errorf("notice %d: unknown kind %q", n.ID, n.Kind)
	}
	return m, m.render(b)
}

// render writes both parts of m.
func (m *Message) render(b body) error {
	var text, html bytes.Buffer
	if err := textTemplate.Execute(&text, b); err != nil {
		return err
	}
	if err := htmlTemplate.Execute(&html, b); err != nil {
		return err
	}
	m.Text, m.HTML = text.String(), html.String()
	return nil
}

// TestMessage is the message admin notice test and the page's "Send a
// test message" send to address a at now: it says it is a test, for which
// member, and that nothing needs doing; with the usual footer when the
// service's public URL is known (the CLI may lack it).
func (t Texts) TestMessage(a certorder.NoticeAddress, now time.Time) (Message, error) {
	lang := a.Lang
	m := Message{To: a.Address, Subject: s(lang, "test.subject", a.Member),
		MessageID: fmt.Sprintf("certorder.test.%d.%d@%s", a.ID, now.UnixNano(), t.host())}
	b := body{Lang: lang, Intro: []string{s(lang, "test.text", a.Address, a.Member), s(lang, "test.nothing")},
		Footer: []line{{Text: s(lang, "footer.why", a.Address, a.Member)}}}
	if t.PublicURL != "" {
		m.Unsubscribe = t.UnsubscribeURL(a)
		b.Footer = append(b.Footer, line{Text: s(lang, "footer.unsubscribe"), URL: m.Unsubscribe},
			line{Text: s(lang, "footer.manage"), URL: t.NoticesURL()})
	}
	return m, m.render(b)
}

// item is one event as a message tells it.
func (t Texts) item(lang string, e Told) item {
	var d eventData
	json.Unmarshal(e.Event.Data, &d)
	it := item{Line: t.Line(lang, e), What: what(lang, e.Event, d, mailValue), URL: t.OrderURL(d.OrderID)}
	it.Open = s(lang, "open", it.URL)
	stated := func(v string) string {
		if v == "" {
			return s(lang, "not_stated")
		}
		return mailValue(v)
	}
	if o := e.Order; o != nil {
		it.Fields = [][2]string{
			{s(lang, "field.common_name"), stated(o.Certificate.CommonName)},
			{s(lang, "field.certificate_ends"), stated(o.Certificate.ValidTill)},
			{s(lang, "field.plan_ends"), stated(o.PlanTill)},
		}
	}
	it.Fields = append(it.Fields, [2]string{s(lang, "field.next_step"), t.step(lang, "", e, d, mailValue)})
	return it
}

// MessageID is the Message-ID of notice n, without angle brackets: the
// same on every attempt, unique to the notice (its ID and the microsecond
// it was queued), at the public URL's host.
func (t Texts) MessageID(n Notice) string {
	return fmt.Sprintf("certorder.%s.%d.%d@%s", n.Kind, n.ID, n.CreatedAt.UnixMicro(), t.host())
}

// host is the public URL's host name, in lower case.
func (t Texts) host() string {
	if u, err := url.Parse(t.PublicURL); err == nil && u.Hostname() != "" {
		return strings.ToLower(u.Hostname())
	}
	return "certorder.invalid"
}
