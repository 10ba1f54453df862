package server_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/notice"
	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/webhook"
)

// rawTime is a date or time as a program writes it, not as a page should:
// ISO 8601 / RFC 3339 (2026-01-15, 2026-01-15T13:00:00Z), a time with
// seconds, and Go's time.Time.String.
var rawTime = regexp.MustCompile(`\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d|[+-]\d{4} UTC|\bUTC\b [+-]`)

var tags = regexp.MustCompile(`(?s)<[^>]*>`)

// pageText is what a reader sees of a page: its text, without tags or
// attributes (a URL may hold a date; it is not shown as one).
func pageText(body string) string { return html.UnescapeString(tags.ReplaceAllString(body, " ")) }

// Every date on every member page, in both languages, is in the page's
// format: no raw ISO timestamps (the certificate history's Issued column
// was one), whatever page renders it: orders, an order and its history,
// the timeline, keys, webhooks and their deliveries, notices and the
// pages of a message's links.
func TestWebEveryDateInThePageFormat(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{Notices: true, PrivateWebhooks: true, AuditRetention: time.Hour})
	ctx := context.Background()
	rc := newHookReceiver(t)
	for _, lang := range []string{"en", "ja"} {
		b := newBrowser(t, base, headerTransport{"Accept-Language": lang})
		b.signIn("alice", f.aliceKey)
		// An endpoint with a delivered, a retrying and a queued delivery;
		// a notice address; a revoked key's page.
		_, secret, id := b.addWebhook(rc.srv.URL+"/hook", "order.renewed")
		if id == 0 {
			t.Fatal("no endpoint added")
		}
		ep := b.get(fmt.Sprintf("/webhooks/%d", id))
		rc.set(secret, http.StatusOK, `{"received":true,"at":"2026-01-15T13:00:00Z"}`)
		b.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {ep.csrf(t)}})
		deliverNow(t, f.store, 0)
		rc.set("", http.StatusServiceUnavailable, "busy")
		b.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {ep.csrf(t)}})
		deliverNow(t, f.store, 0)
		b.post(fmt.Sprintf("/webhooks/%d/test", id), url.Values{"csrf": {ep.csrf(t)}})
		list := b.get("/notices")
		p := b.post("/notices", url.Values{"csrf": {list.csrf(t)}, "address": {lang + "-ops@acme.example"}, "lang": {lang}})
		m := regexp.MustCompile(`added=(\d+)`).FindStringSubmatch(p.header.Get("Location"))
		if m == nil {
			t.Fatalf("notice add: %d %s", p.status, p.body)
		}
		aid, _ := strconv.ParseInt(m[1], 10, 64)
		addr, err := f.store.FindNoticeAddress(ctx, aid)
		if err != nil {
			t.Fatal(err)
		}
		id2 := keyIDOf(t, f.aliceKey)
		paths := []string{"/orders", "/orders?renewed=1", "/orders/1001", "/orders/1002", "/orders/1003", "/timeline",
			"/keys", "/keys/" + id2 + "/revoke", "/webhooks", fmt.Sprintf("/webhooks/%d", id), fmt.Sprintf("/webhooks/%d/delete", id),
			"/notices", fmt.Sprintf("/notices/%d", aid),
			"/notices/confirm?t=" + url.QueryEscape(notice.ConfirmToken(addr)),
			"/notices/unsubscribe?t=" + url.QueryEscape(notice.UnsubscribeToken(addr)),
			"/notices/block?t=" + url.QueryEscape(notice.BlockToken(addr))}
		history, dated := 0, 0
		for _, path := range paths {
			p := b.get(path)
			if p.status != http.StatusOK {
				t.Errorf("%s %s: %d", lang, path, p.status)
				continue
			}
			text := pageText(p.body)
			// The receiver's own answer may hold its timestamps: they are its words, not a date of the page.
			text = strings.ReplaceAll(text, "2026-01-15T13:00:00Z", "")
			if raw := rawTime.FindAllString(text, 5); raw != nil {
				i := rawTime.FindStringIndex(text)
				t.Errorf("%s %s shows raw times %q: …%s…", lang, path, raw, text[max(0, i[0]-80):min(len(text), i[1]+40)])
			}
			if strings.Contains(p.body, `class="history"`) {
				history++
				// Every Issued cell: a date as the page writes it, or "not stated".
				cells := regexp.MustCompile(`data-label="(?:Issued|発行日時?)">([^<]*)</td>`).FindAllStringSubmatch(p.body, -1)
				date := regexp.MustCompile(`^(\d{1,2} [A-Z][a-z]{2} \d{4}|\d{4}年\d{1,2}月\d{1,2}日|not stated|記載なし)$`)
				for _, c := range cells {
					if strings.ContainsAny(c[1], "0123456789") {
						dated++
					}
					if !date.MatchString(html.UnescapeString(c[1])) {
						t.Errorf("%s %s: the history's Issued %q is not a date in the page's format", lang, path, c[1])
					}
				}
				if len(cells) == 0 {
					t.Errorf("%s %s: no Issued cell in the history", lang, path)
				}
			}
		}
		if history == 0 || dated == 0 {
			t.Errorf("%s: %d pages with a certificate history checked, %d issue dates", lang, history, dated)
		}
	}
}

// A delivered message's row shows the receiver's status and the start of
// its answer (not "none"): bounded, printable, with the endpoint's secret
// redacted; a 2xx without a body says so; a failure still shows its error.
func TestWebWebhookDeliveredAnswer(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{PrivateWebhooks: true})
	rc := newHookReceiver(t)
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	_, secret, id := b.addWebhook(rc.srv.URL+"/hook", "order.renewed")
	if id == 0 {
		t.Fatal("no endpoint added")
	}
	path := fmt.Sprintf("/webhooks/%d", id)
	send := func(status int, answer string) page {
		t.Helper()
		rc.set(secret, status, answer)
		b.post(path+"/test", url.Values{"csrf": {b.get(path).csrf(t)}})
		deliverNow(t, f.store, 0)
		return b.get(path)
	}
	long := "accepted:\x00\x1b[31m event\n\tqueued " + strings.Repeat("x", 300) + " echo " + secret
	p := send(http.StatusOK, long)
	rows := regexp.MustCompile(`(?s)<tr>.*?</tr>`).FindAllString(p.body, -1)
	if len(rows) < 2 {
		t.Fatalf("no delivery row:\n%s", redact(p.body))
	}
	row := html.UnescapeString(rows[1]) // newest first, after the header row
	cell := regexp.MustCompile(`(?s)class="answer">(.*?)</td>`).FindStringSubmatch(row)
	if cell == nil || !strings.Contains(row, `data-label="HTTP status" class="num">200<`) {
		t.Fatalf("the delivered row:\n%s", redact(row))
	}
	answer := cell[1]
	if full := regexp.MustCompile(`(?s)<pre>(.*)</pre>`).FindStringSubmatch(answer); full != nil {
		answer = full[1] // the page folds a long one: its start, and all of it
	}
	if !strings.HasPrefix(answer, "accepted: [31m event queued xxx") || len(answer) > webhook.MaxExcerpt ||
		!strings.HasSuffix(answer, "…") || strings.ContainsAny(answer, "\x00\x1b\n\t") || strings.Contains(answer, "none") {
		t.Errorf("the delivered answer (%d bytes): %q", len(answer), answer)
	}
	// The secret, short enough to fit the excerpt, is redacted.
	p = send(http.StatusAccepted, "ok "+secret+" "+strings.TrimPrefix(secret, "whsec_"))
	if body := html.UnescapeString(p.body); strings.Contains(body, strings.TrimPrefix(secret, "whsec_")) ||
		!strings.Contains(body, "ok whsec_(redacted) (redacted)") || !strings.Contains(body, `class="num">202<`) {
		t.Errorf("the secret in an answer:\n%s", redact(body))
	}
	for _, d := range memberDeliveries(t, f.store, aliceID(t, f), id, 10) {
		if strings.Contains(d.LastAnswer+d.LastError, strings.TrimPrefix(secret, "whsec_")) {
			t.Errorf("delivery %d stored the secret", d.ID)
		}
	}
	mustContain(t, "a 204", send(http.StatusNoContent, ""), `class="answer">empty body<`)
	mustContain(t, "a failure", send(http.StatusInternalServerError, "receiver says no"), "receiver says no", `class="num">500<`)

	// In Japanese too.
	ja := newBrowser(t, base, headerTransport{"Accept-Language": "ja"})
	ja.signIn("alice", f.aliceKey)
	mustContain(t, "the Japanese page", ja.get(path), `class="answer">本文なし<`, `class="answer">ok whsec_(redacted) (redacted)<`)
}

// Every page a message's link opens is in the address's language, not the
// browser's: a Japanese address's confirmation, unsubscribe and block
// pages (and what their buttons answer, and an expired link) are in
// Japanese for a browser that asks for English; the language switch's
// choice goes before it.
func TestWebNoticeLinksInAddressLanguage(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{Notices: true})
	ctx := context.Background()
	member := newBrowser(t, base, nil)
	member.signIn("alice", f.aliceKey)
	csrf := member.get("/notices").csrf(t)
	add := func(address string) int64 {
		t.Helper()
		p := member.post("/notices", url.Values{"csrf": {csrf}, "address": {address}, "lang": {"ja"}})
		m := regexp.MustCompile(`added=(\d+)`).FindStringSubmatch(p.header.Get("Location"))
		if m == nil {
			t.Fatalf("add %s: %d\n%s", address, p.status, p.body)
		}
		id, _ := strconv.ParseInt(m[1], 10, 64)
		return id
	}
	aid := add("tanaka@acme.example")
	a, err := f.store.FindNoticeAddress(ctx, aid)
	if err != nil || a.Lang != "ja" {
		t.Fatalf("stored: %+v %v", a, err)
	}
	en := newBrowser(t, base, headerTransport{"Accept-Language": "en-US,en;q=0.9"}) // the recipient, not signed in
	japanese := func(what string, p page, wants ...string) {
		t.Helper()
		if !strings.Contains(p.body, `<html lang="ja">`) {
			t.Errorf("%s is not in Japanese: %d\n%s", what, p.status, p.body)
		}
		mustContain(t, what, p, wants...)
	}
	confirm, unsub, block := notice.ConfirmToken(a), notice.UnsubscribeToken(a), notice.BlockToken(a)
	japanese("the confirmation page", en.get("/notices/confirm?t="+url.QueryEscape(confirm)), "宛先の確認", ">確認<")
	japanese("the confirmation page's button", en.post("/notices/confirm", url.Values{"t": {confirm}}), "確認しました。tanaka@acme.example")
	japanese("the confirmation used again", en.get("/notices/confirm?t="+url.QueryEscape(confirm)), "この確認リンクはすでに使用されています")
	japanese("the unsubscribe page", en.get("/notices/unsubscribe?t="+url.QueryEscape(unsub)), "送るのを停止しますか", "tanaka@acme.example")
	japanese("the block page", en.get("/notices/block?t="+url.QueryEscape(block)), "certorder からのメールを拒否", ">拒否<")
	// The switch's cookie: the reader's own choice.
	chosen := newBrowser(t, base, headerTransport{"Accept-Language": "ja"})
	chosen.get("/lang?l=en&next=/")
	if p := chosen.get("/notices/unsubscribe?t=" + url.QueryEscape(unsub)); !strings.Contains(p.body, `<html lang="en">`) {
		t.Errorf("the switch's choice is not kept on a link page:\n%s", p.body)
	}
	// One-click unsubscribe (a mail client's POST) and the block answer, in Japanese.
	japanese("the unsubscribe answer", en.post("/notices/unsubscribe?t="+url.QueryEscape(unsub), url.Values{"List-Unsubscribe": {"One-Click"}}),
		"配信を停止しました")
	japanese("the unsubscribed page", en.get("/notices/unsubscribe?t="+url.QueryEscape(unsub)), "配信を停止しました")
	japanese("the block answer", en.post("/notices/block", url.Values{"t": {block}}), "拒否しました。certorder は今後 tanaka@acme.example")

	// An expired confirmation of a Japanese address: in Japanese too.
	old, _ := notice.NewAddress("old@acme.example", "ja", nil)
	old.CreatedAt = today.Add(-notice.ConfirmFor - time.Minute)
	if old, err = f.store.AddNoticeAddress(ctx, aliceID(t, f), old, 5); err != nil {
		t.Fatal(err)
	}
	p := en.get("/notices/confirm?t=" + url.QueryEscape(notice.ConfirmToken(old)))
	if p.status != http.StatusGone {
		t.Errorf("an expired link: %d", p.status)
	}
	japanese("an expired link", p, "この確認リンクは期限切れです")
	// A link that names no address has no language but the browser's.
	if p := en.get("/notices/confirm?t=c.999999.1.x"); p.status != http.StatusNotFound || !strings.Contains(p.body, `<html lang="en">`) {
		t.Errorf("a forged link: %d", p.status)
	}
}
