package notice_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/notice"
)

var now = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func order(id int64, validTill, planTill string, renewedBy int64, renewal certorder.RenewalState) *certorder.Order {
	return &certorder.Order{ID: id, Status: "issued", PlanTill: planTill, RenewedBy: renewedBy, Renewal: renewal,
		Certificate: certorder.Certificate{CommonName: "shop.example.com", ValidFrom: "2026-06-01", ValidTill: validTill}}
}

func event(typ, data string) certorder.Event {
	return certorder.Event{MemberID: 1, Type: typ, Data: []byte(data), At: now}
}

// The line says the order's number, its common name, what happened and
// what to do by when, in each language, from the order as it is now.
func TestLine(t *testing.T) {
	t.Parallel()
	texts := notice.Texts{PublicURL: "https://certorder.example/"}
	for _, c := range []struct {
		name, lang string
		told       notice.Told
		want       string
	}{
		{"plan ending", "en", notice.Told{Event: event("order.plan_ending", `{"order_id":10001,"order_valid_till":"2027-03-01"}`),
			Order: order(10001, "2027-02-20", "2027-03-01", 0, certorder.RenewalNone), Now: now},
			"The plan of order 10001 (shop.example.com) ends on 2027-03-01. Renew the contract by 2027-03-01."},
		{"plan ending ja", "ja", notice.Told{Event: event("order.plan_ending", `{"order_id":10001,"order_valid_till":"2027-03-01"}`),
			Order: order(10001, "2027-02-20", "2027-03-01", 0, certorder.RenewalNone), Now: now},
			"注文 10001 (shop.example.com) の契約は 2027-03-01 に終了します。2027-03-01 までに契約を更新してください。"},
		{"expiring", "en", notice.Told{Event: event("order.expiring", `{"order_id":10001,"valid_till":"2026-12-08"}`),
			Order: order(10001, "2026-12-08", "2028-06-01", 0, certorder.RenewalNone), Now: now},
			"The certificate of order 10001 (shop.example.com) ends on 2026-12-08. Reissue by 2026-12-08."},
		{"renewed, renewal pending", "en", notice.Told{Event: event("order.renewed", `{"order_id":10001,"renewed_order_id":10002}`),
			Order: order(10001, "2026-12-08", "2026-12-20", 10002, certorder.RenewalPending), Now: now},
			"Order 10001 (shop.example.com) was renewed as order 10002. Get renewal 10002 issued by 2026-12-08."},
		{"renewed ja", "ja", notice.Told{Event: event("order.renewed", `{"order_id":10001,"renewed_order_id":10002}`),
			Order: order(10001, "2026-12-08", "2026-12-20", 10002, certorder.RenewalIssued), Now: now},
			"注文 10001 (shop.example.com) は注文 10002 に更新されました。今後は注文 10002 をご確認ください。"},
		{"status", "en", notice.Told{Event: event("order.status_changed", `{"order_id":7,"status":"revoked","previous_status":"issued"}`),
			Order: &certorder.Order{ID: 7, Status: "revoked", Certificate: certorder.Certificate{CommonName: "a.example"}}, Now: now},
			"Order 7 (a.example) is now revoked. Nothing more to do."},
		{"status ja", "ja", notice.Told{Event: event("order.status_changed", `{"order_id":7,"status":"revoked","previous_status":"issued"}`),
			Order: &certorder.Order{ID: 7, Status: "revoked", Certificate: certorder.Certificate{CommonName: "a.example"}}, Now: now},
			"注文 7 (a.example) の状態が revoked になりました。これ以上の手続きは不要です。"},
		{"order gone: the event's data", "en", notice.Told{Event: event("order.plan_ending", `{"order_id":9,"valid_till":"2027-02-01","order_valid_till":"2027-02-01"}`), Now: now},
			"The plan of order 9 ends on 2027-02-01. Renew the contract by 2027-02-01."},
	} {
		if got := texts.Line(c.lang, c.told); got != c.want {
			t.Errorf("%s: Line = %q, want %q", c.name, got, c.want)
		}
	}
	got := texts.ChatLine(notice.Told{Event: event("order.reissued", `{"order_id":10001,"certificate":{"valid_till":"2027-06-01"}}`),
		Order: order(10001, "2027-06-01", "2028-06-01", 0, certorder.RenewalNone), Now: now})
	if want := "Order 10001 (shop.example.com) has a new certificate. Nothing is due yet. https://certorder.example/orders/10001"; got != want {
		t.Errorf("ChatLine = %q, want %q", got, want)
	}
	// order.expiring and order.plan_ending of one order on one day: two
	// subjects, not one twice.
	o := order(10001, "2027-02-20", "2027-02-20", 0, certorder.RenewalNone)
	for _, lang := range notice.Languages {
		expiring := texts.Line(lang, notice.Told{Event: event("order.expiring", `{"order_id":10001,"valid_till":"2027-02-20"}`), Order: o, Now: now})
		ending := texts.Line(lang, notice.Told{Event: event("order.plan_ending", `{"order_id":10001,"order_valid_till":"2027-02-20"}`), Order: o, Now: now})
		if expiring == ending {
			t.Errorf("%s: one subject for both: %q", lang, expiring)
		}
	}
}

// Every message key is in every language.
func TestCatalogues(t *testing.T) {
	t.Parallel()
	en := notice.Catalogue("en")
	for _, lang := range notice.Languages {
		cat := notice.Catalogue(lang)
		for key := range en {
			if _, ok := cat[key]; !ok {
				t.Errorf("%s lacks %s", lang, key)
			}
		}
		if len(cat) != len(en) {
			t.Errorf("%s has %d keys, en %d", lang, len(cat), len(en))
		}
	}
}

// A message has both parts in the address's language, the links, and a
// one-click unsubscribe link whose token checks; a digest names its day
// and holds every event.
func TestCompose(t *testing.T) {
	t.Parallel()
	texts := notice.Texts{PublicURL: "https://certorder.example"}
	a, err := notice.NewAddress("Ops@Example.COM", "ja", nil)
	if err != nil {
		t.Fatal(err)
	}
	a.ID, a.Member, a.CreatedAt, a.ConfirmedAt = 3, "acme-corp", now, now
	if a.Address != "ops@example.com" {
		t.Errorf("address = %q, want it in lower case", a.Address)
	}
	one := notice.Told{Event: event("order.plan_ending", `{"order_id":10001,"order_valid_till":"2027-03-01"}`),
		Order: order(10001, "2027-02-20", "2027-03-01", 0, certorder.RenewalNone), Now: now}
	m, err := texts.Compose(notice.Notice{ID: 5, Kind: notice.KindEvent, Day: "2026-12-01", CreatedAt: now, Address: a},
		[]notice.Told{one}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "注文 10001 (shop.example.com) の契約は 2027-03-01 に終了します。2027-03-01 までに契約を更新してください。" || m.To != a.Address {
		t.Errorf("subject %q to %q", m.Subject, m.To)
	}
	for _, part := range []string{m.Text, m.HTML} {
		for _, want := range []string{"注文 10001 の契約は 2027-03-01 に終了します", "https://certorder.example/orders/10001",
			"ワンクリックで配信停止", "https://certorder.example/notices/unsubscribe?t=u.3.", "https://certorder.example/notices"} {
			if !strings.Contains(part, want) {
				t.Errorf("part lacks %q:\n%s", want, part)
			}
		}
	}
	if !strings.Contains(m.HTML, `<html lang="ja">`) || !strings.HasPrefix(m.Unsubscribe, "https://certorder.example/notices/unsubscribe?t=") {
		t.Errorf("html or unsubscribe: %q\n%s", m.Unsubscribe, m.HTML)
	}
	token := strings.TrimPrefix(m.Unsubscribe, "https://certorder.example/notices/unsubscribe?t=")
	if err := notice.CheckUnsubscribeToken(a, token); err != nil {
		t.Errorf("the message's unsubscribe token: %v", err)
	}
	if id := texts.MessageID(notice.Notice{ID: 5, Kind: "event", CreatedAt: now}); id != m.MessageID ||
		!strings.HasSuffix(id, "@certorder.example") {
		t.Errorf("Message-ID %q, then %q", m.MessageID, id)
	}

	a.Lang = "en"
	var told []notice.Told
	for i := range 4 {
		told = append(told, notice.Told{Event: event("order.renewed", `{"order_id":`+string(rune('1'+i))+`,"renewed_order_id":99}`), Now: now})
	}
	d, err := texts.Compose(notice.Notice{ID: 6, Kind: notice.KindDigest, Day: "2026-12-01", Address: a}, told, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Subject != "certorder: 4 more events for member acme-corp on 2026-12-01" {
		t.Errorf("digest subject %q", d.Subject)
	}
	for i := range 4 {
		if want := "Order " + string(rune('1'+i)) + " was renewed as order 99"; !strings.Contains(d.Text, want) || !strings.Contains(d.HTML, want) {
			t.Errorf("digest lacks %q:\n%s", want, d.Text)
		}
	}

	c, err := texts.Compose(notice.Notice{ID: 7, Kind: notice.KindConfirm, Address: a}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Unsubscribe, "https://certorder.example/notices/block?t=b.3.") ||
		!strings.Contains(c.Text, "https://certorder.example/notices/confirm?t=c.3.") || !strings.Contains(c.Text, c.Unsubscribe) {
		t.Errorf("confirmation: unsubscribe %q\n%s", c.Unsubscribe, c.Text)
	}
	// HTML escapes what an order carries.
	evil := one
	evil.Order = order(10001, "2027-02-20", "2027-03-01", 0, certorder.RenewalNone)
	evil.Order.Certificate.CommonName = `<script>x</script>`
	e, err := texts.Compose(notice.Notice{ID: 8, Kind: notice.KindEvent, Address: a}, []notice.Told{evil}, 0)
	if err != nil || strings.Contains(e.HTML, "<script>") {
		t.Errorf("HTML not escaped (%v):\n%s", err, e.HTML)
	}
}

// The tokens: a confirmation link works for its address until it expires;
// no token works for another address, another ID or a changed MAC.
func TestTokens(t *testing.T) {
	t.Parallel()
	a, err := notice.NewAddress("ops@example.com", "en", nil)
	if err != nil {
		t.Fatal(err)
	}
	a.ID, a.CreatedAt = 3, now
	b, _ := notice.NewAddress("ops@example.com", "en", nil) // the same address added again: a new secret
	b.ID, b.CreatedAt = 3, now

	c := notice.ConfirmToken(a)
	if id, ok := notice.TokenAddress(c); !ok || id != 3 {
		t.Errorf("TokenAddress(%q) = %d %v", c, id, ok)
	}
	if err := notice.CheckConfirmToken(a, c, now.Add(notice.ConfirmFor-time.Second)); err != nil {
		t.Errorf("fresh confirmation: %v", err)
	}
	if err := notice.CheckConfirmToken(a, c, now.Add(notice.ConfirmFor+time.Second)); !errors.Is(err, notice.ErrExpired) {
		t.Errorf("expired confirmation: %v", err)
	}
	u := notice.UnsubscribeToken(a)
	parts := strings.Split(c, ".")
	parts[2] = "9999999999"
	later := strings.Join(parts, ".")
	bad := []struct {
		name  string
		check error
	}{
		{"another secret", notice.CheckConfirmToken(b, c, now)},
		{"an unsubscribe token as a confirmation", notice.CheckConfirmToken(a, u, now)},
		{"a later expiry", notice.CheckConfirmToken(a, later, now)},
		{"a confirmation as an unsubscribe token", notice.CheckUnsubscribeToken(a, c)},
		{"unsubscribe, another secret", notice.CheckUnsubscribeToken(b, u)},
		{"unsubscribe, MAC cut", notice.CheckUnsubscribeToken(a, u[:len(u)-1])},
	}
	for _, c := range bad {
		if !errors.Is(c.check, notice.ErrLink) {
			t.Errorf("%s: %v, want ErrLink", c.name, c.check)
		}
	}
	if err := notice.CheckUnsubscribeToken(a, u); err != nil {
		t.Errorf("unsubscribe: %v", err)
	}
	// A block link is checked against the confirmations recorded for its
	// address ID: the one it came in, not another of the same ID.
	bt := notice.BlockToken(a)
	record := func(x certorder.NoticeAddress) certorder.NoticeConfirmation {
		return certorder.NoticeConfirmation{AddressID: x.ID, Address: x.Address, Secret: x.Secret}
	}
	if got, err := notice.CheckBlockToken([]certorder.NoticeConfirmation{record(b), record(a)}, bt); err != nil || got.Secret != a.Secret {
		t.Errorf("block token: %+v %v", got, err)
	}
	for name, cs := range map[string][]certorder.NoticeConfirmation{"another secret": {record(b)}, "none": nil} {
		if _, err := notice.CheckBlockToken(cs, bt); !errors.Is(err, notice.ErrLink) {
			t.Errorf("block token, %s: %v", name, err)
		}
	}
	if _, err := notice.CheckBlockToken([]certorder.NoticeConfirmation{record(a)}, u); !errors.Is(err, notice.ErrLink) {
		t.Errorf("an unsubscribe token as a block token: %v", err)
	}
	// A secret too short to sign with (a doctored restore) signs nothing:
	// no token of it is accepted, not even its own.
	weak := a
	weak.Secret = "eA=="
	for name, err := range map[string]error{"confirm": notice.CheckConfirmToken(weak, notice.ConfirmToken(weak), now),
		"unsubscribe": notice.CheckUnsubscribeToken(weak, notice.UnsubscribeToken(weak)),
		"forged":      notice.CheckUnsubscribeToken(weak, "u.3.")} {
		if !errors.Is(err, notice.ErrLink) {
			t.Errorf("a weak secret's %s token: %v", name, err)
		}
	}
	for _, s := range []string{"", "u", "u.x.y", "u.-1.y", strings.Repeat("u.1.", 60)} {
		if _, ok := notice.TokenAddress(s); ok {
			t.Errorf("TokenAddress(%q) names an address", s)
		}
	}
}

// A new address is a bare address; its language and events are checked.
func TestNewAddress(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		address, lang string
		events        []string
		want          error
	}{
		{"ops@example.com", "", []string{"order.renewed", " ", "order.renewed"}, nil},
		{"Ops <ops@example.com>", "en", nil, notice.ErrAddress},
		{"ops@localhost", "en", nil, notice.ErrAddress},
		{"ops@example.com\r\nBcc: x@example.com", "en", nil, notice.ErrAddress},
		{"a@b.example, c@d.example", "en", nil, notice.ErrAddress},
		{strings.Repeat("a", 250) + "@b.example", "en", nil, notice.ErrAddress},
		{"ops@example.com", "fr", nil, notice.ErrLanguage},
		{"ops@example.com", "en", []string{"order.nope"}, notice.ErrEventType},
	} {
		a, err := notice.NewAddress(c.address, c.lang, c.events)
		if !errors.Is(err, c.want) || (err != nil) != (c.want != nil) {
			t.Errorf("NewAddress(%q, %q, %q) = %v, want %v", c.address, c.lang, c.events, err, c.want)
			continue
		}
		if err == nil && (a.Lang != "en" || len(a.EventTypes) != 1 || len(a.Secret) < 40) {
			t.Errorf("NewAddress: %+v", a)
		}
		if err != nil && !errors.Is(err, certorder.ErrInvalid) {
			t.Errorf("%v is not ErrInvalid", err)
		}
	}
}

// The step phrases of the messages are the member page's, word for word.
func TestStepPhrasesMatchThePage(t *testing.T) {
	t.Parallel()
	for _, lang := range notice.Languages {
		b, err := os.ReadFile("../server/web/locales/" + lang + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var page map[string]string
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatal(err)
		}
		n := 0
		for key, want := range page {
			if !strings.HasPrefix(key, "next.") || strings.HasPrefix(key, "next.explain.") {
				continue
			}
			n++
			if got := notice.Catalogue(lang)[key]; got != want {
				t.Errorf("%s %s: %q, the page says %q", lang, key, got, want)
			}
		}
		if n < 10 {
			t.Errorf("%s: %d step phrases on the page", lang, n)
		}
	}
}
