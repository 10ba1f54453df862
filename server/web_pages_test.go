package server_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/server"
	"github.com/certorder/certorder/storetest"
)

// The timeline: current orders only, soonest end first, grouped by month,
// each bar a link, today marked, the renewal window shaded, expired and
// expiring said in words; 50 to a page.
func TestWebTimeline(t *testing.T) {
	t.Parallel()
	feb10 := time.Date(2026, 2, 10, 9, 0, 0, 0, time.UTC)
	f, base := webFixture(t, server.Config{Now: func() time.Time { return feb10 }})
	docs := []string{storetest.OrderJSON(1010, 0, "2026-03-01"), storetest.OrderJSON(1011, 0, "2020-01-01"),
		storetest.OrderJSON(1012, 0, "2026-08-15"), storetest.OrderJSON(1013, 0, "2029-05-01")}
	for i := range 60 {
		docs = append(docs, storetest.OrderJSON(int64(6000+i), 0, "2027-01-20"))
	}
	if _, err := f.store.ImportOrders(context.Background(), "alice", storetest.Orders(t, docs...)); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	p := b.get("/timeline")
	if p.status != 200 {
		t.Fatalf("timeline: %d", p.status)
	}
	// 1003 (current of its chain), 1010-1013 and 60 more; 1001 and 1002 were renewed.
	for _, want := range []string{`65 current orders page 1 of 2`, `<h2 class="tl-group">Expired and not renewed</h2>`,
		`<h2 class="tl-group">Ending in Mar 2026</h2>`, `<h2 class="tl-group">Ending in Aug 2026</h2>`, `<h2 class="tl-group">Ending in Jan 2027</h2>`,
		`<a class="tl-row" href="/orders/1010">`, `<span class="tl-when expiring">certificate ends 1 Mar 2026 · Within its reissue window: 19 days left</span>`,
		`<span class="tl-when expired">certificate ends 1 Jan 2020 · Expired 2232 days ago</span>`,
		`<span class="m">Feb</span><span class="y">2026</span>`, `<span class="m">Jan</span><span class="y">2027</span>`, `<span class="m">Feb</span></span></span>`,
		`class="tl-today"`, `class="tl-window"`, `rel="next"`, `href="/timeline?page=2"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("timeline lacks %s", want)
		}
	}
	for _, unwanted := range []string{`href="/orders/1001"`, `href="/orders/1002"`, `href="/orders/2001"`, ` style=`, `<script`} {
		if strings.Contains(p.body, unwanted) {
			t.Errorf("timeline has %s", unwanted)
		}
	}
	// Today (10 Feb) is 9/28 into the first of 13 month columns of 1000 units.
	if !strings.Contains(p.body, `<line class="tl-today" x1="24.7" x2="24.7"`) {
		t.Errorf("today's line is not at 24.7")
	}
	// 1010 ends 1 Mar: its bar runs from today to the end of 1 Mar (1/31
	// into the second column), all of it inside the renewal window.
	row := regexp.MustCompile(`(?s)href="/orders/1010">.*?</a>`).FindString(p.body)
	if !strings.Contains(row, `<rect class="tl-expiring" x="24.7" y="4" width="54.7"`) || !strings.Contains(row, `<rect class="tl-window" x="24.7" y="4" width="54.7"`) {
		t.Errorf("order 1010's bar:\n%s", row)
	}
	// 1011 expired: words, no bar.
	row = regexp.MustCompile(`(?s)href="/orders/1011">.*?</a>`).FindString(p.body)
	if strings.Contains(row, "<rect") {
		t.Errorf("an expired order has a bar:\n%s", row)
	}
	// Page 2 holds the rest, ending with the one past the timeline's 13 months.
	p2 := b.get("/timeline?page=2")
	if !strings.Contains(p2.body, `href="/orders/1013"`) || !strings.Contains(p2.body, `Ending after Feb 2027`) ||
		!strings.Contains(p2.body, `beyond this timeline`) || strings.Contains(p2.body, `href="/orders/1010"`) {
		t.Errorf("timeline page 2:\n%s", p2.body)
	}
	row = regexp.MustCompile(`(?s)href="/orders/1013">.*?</a>`).FindString(p2.body)
	if !strings.Contains(row, `x="24.7" y="4" width="975.3"`) {
		t.Errorf("order 1013's bar should reach the end:\n%s", row)
	}
	// The filter narrows it.
	if p := b.get("/timeline?q=host1012"); !strings.Contains(p.body, "1 current order<") || !strings.Contains(p.body, `href="/orders/1012"`) {
		t.Errorf("filtered timeline:\n%s", p.body)
	}
}

func readCSV(t *testing.T, p page) [][]string {
	t.Helper()
	if p.status != 200 || p.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		p.header.Get("Content-Disposition") != `attachment; filename="orders.csv"` {
		t.Fatalf("CSV: %d %v", p.status, p.header)
	}
	body, ok := strings.CutPrefix(p.body, "\uFEFF")
	if !ok {
		t.Fatal("the CSV has no byte order mark")
	}
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return records
}

// The CSV holds the list's columns with its filter, every page of it,
// and nothing a spreadsheet would run.
func TestWebCSV(t *testing.T) {
	t.Parallel()
	feb10 := time.Date(2026, 2, 10, 9, 0, 0, 0, time.UTC)
	f, base := webFixture(t, server.Config{Now: func() time.Time { return feb10 }})
	evil := strings.Replace(storetest.OrderJSON(1020, 0, "2026-03-01"), `"common_name":"host1020.example.com"`,
		`"common_name":"=HYPERLINK(\"http://evil.example\",\"x\")"`, 1)
	evil = strings.Replace(evil, `"name":"Basic"`, `"name":"@SUM(1+1)"`, 1)
	docs := []string{evil}
	for i := range 1100 { // more than two of the export's batches
		docs = append(docs, storetest.OrderJSON(int64(7000+i), 0, "2027-01-20"))
	}
	if _, err := f.store.ImportOrders(context.Background(), "alice", storetest.Orders(t, docs...)); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)

	all := readCSV(t, b.get("/orders.csv?renewed=1&sort=order"))
	if len(all) != 1+3+1+1100 {
		t.Fatalf("%d lines, want %d", len(all), 1+3+1+1100)
	}
	if got := strings.Join(all[0], ","); got != "Order,Common name,Product,Status,Valid till,Days remaining,Expiry,Renewed by,Renews,Plan ends,Next step,Next step by,What to do" {
		t.Errorf("header: %s", got)
	}
	for _, want := range []string{
		"1001,old.example.com,Standard SSL,pending_reissue,2020-01-01,,Renewed,1002,,2020-01-01,renewed,,Renewed as 1002",
		"1002,old.example.com,Standard SSL,issued,2026-03-01,,Renewed,1003,1001,,renewed,,Renewed as 1003",
		"1003,old.example.com,,issued,2027-03-01,384,384 days left,,1002,,none,,Nothing due yet (the plan's end is not stated)", // no product in its document
		`1020,"'=HYPERLINK(""http://evil.example"",""x"")",'@SUM(1+1),issued,2026-03-01,19,Within its reissue window: 19 days left,,,,none,2026-03-01,Reissue or renew by 1 Mar 2026 (the plan's end is not stated)`,
	} {
		if !strings.Contains(strings.TrimPrefix(b.get("/orders.csv?renewed=1").body, "\uFEFF"), want+"\n") {
			t.Errorf("CSV lacks %s", want)
		}
	}
	if all[len(all)-1][0] != "8099" {
		t.Errorf("last line: %v", all[len(all)-1])
	}
	// The default list hides renewed orders; a filter and a sort apply.
	if got := readCSV(t, b.get("/orders.csv?sort=order")); len(got) != 1+1+1+1100 {
		t.Errorf("renewed hidden: %d lines", len(got))
	}
	got := readCSV(t, b.get("/orders.csv?q=OLD.EXAMPLE&renewed=1&sort=-expiry"))
	var ids []string
	for _, r := range got[1:] {
		ids = append(ids, r[0])
	}
	if strings.Join(ids, " ") != "1003 1002 1001" {
		t.Errorf("filtered and sorted: %v", ids)
	}
	// Another member's orders never appear; signed out, there is no CSV.
	if strings.Contains(b.get("/orders.csv?renewed=1").body, "2001") {
		t.Error("the CSV holds bob's order")
	}
	if p := newBrowser(t, base, nil).get("/orders.csv"); p.status != http.StatusSeeOther {
		t.Errorf("signed out: %d", p.status)
	}
	// In Japanese, the header and the words are Japanese; numbers and dates stay as they are.
	ja := newBrowser(t, base, headerTransport{"Accept-Language": "ja"})
	ja.signIn("alice", f.aliceKey)
	jaCSV := readCSV(t, ja.get("/orders.csv?q=old.example"))
	if strings.Join(jaCSV[0], ",") != "注文,コモンネーム,製品,ステータス,有効期限,残り日数,期限,更新後の注文,更新元の注文,契約の終了日,次の手順,次の手順の期限,対応内容" ||
		len(jaCSV) != 2 || strings.Join(jaCSV[1], ",") != "1003,old.example.com,,issued,2027-03-01,384,残り384日,,1002,,none,,対応不要（契約の終了日の記載なし）" {
		t.Errorf("Japanese CSV: %v", jaCSV)
	}
}

var htmlLang = regexp.MustCompile(`<html lang="([a-z]+)">`)

// The page follows Accept-Language, the switch is remembered, and the
// API's texts stay as the spec writes them.
func TestWebLanguages(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	for _, tc := range []struct{ accept, lang, heading string }{
		{"", "en", "<h1>Sign in</h1>"},
		{"ja", "ja", "<h1>ログイン</h1>"},
		{"ja-JP,ja;q=0.9,en-US;q=0.8,en;q=0.7", "ja", "<h1>ログイン</h1>"},
		{"en-GB,ja;q=0.5", "en", "<h1>Sign in</h1>"},
		{"fr-FR,de;q=0.8", "en", "<h1>Sign in</h1>"},
		{"fr, ja;q=0.1", "ja", "<h1>ログイン</h1>"},
		{"!!!garbage", "en", "<h1>Sign in</h1>"},
	} {
		b := newBrowser(t, base, headerTransport{"Accept-Language": tc.accept})
		p := b.get("/signin")
		if m := htmlLang.FindStringSubmatch(p.body); m == nil || m[1] != tc.lang || !strings.Contains(p.body, tc.heading) {
			t.Errorf("Accept-Language %q: %v", tc.accept, m)
		}
	}

	// The switch: a cookie, then back to the page it was used on.
	b := newBrowser(t, base, headerTransport{"Accept-Language": "en"})
	b.signIn("alice", f.aliceKey)
	orders := b.get("/orders?renewed=1")
	sw := regexp.MustCompile(`<a href="(/lang\?[^"]+)" lang="ja"`).FindStringSubmatch(orders.body)
	if sw == nil {
		t.Fatalf("no switch to Japanese:\n%s", orders.body)
	}
	p := b.get(strings.ReplaceAll(sw[1], "&amp;", "&"))
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/orders?renewed=1" ||
		!strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ""), "certorder_lang=ja; Path=/; Max-Age=31536000; HttpOnly; SameSite=Lax") {
		t.Fatalf("switch: %d %s %v", p.status, p.header.Get("Location"), p.header.Values("Set-Cookie"))
	}
	ja := b.get("/orders?renewed=1")
	for _, want := range []string{`<html lang="ja">`, `<h1>注文一覧</h1>`, `更新済み`, `2020年1月1日`, `ログイン中:`, `aria-current="true">日本語</a>`} {
		if !strings.Contains(ja.body, want) {
			t.Errorf("Japanese orders page lacks %s", want)
		}
	}
	if order := b.get("/orders/1001"); !strings.Contains(order.body, "2019年1月2日 10:11 (UTC&#43;09:00)") || !strings.Contains(order.body, "記載なし") {
		t.Errorf("Japanese order page:\n%s", order.body)
	}
	// The switch goes only to this site's pages, and knows only its languages.
	for next, want := range map[string]string{"//evil.example/": "/", "https://evil.example/": "/", "/timeline": "/timeline"} {
		if p := b.get("/lang?" + url.Values{"l": {"en"}, "next": {next}}.Encode()); p.header.Get("Location") != want {
			t.Errorf("switch to %s went to %s", next, p.header.Get("Location"))
		}
	}
	if p := b.get("/lang?l=xx&next=/orders"); p.status != http.StatusNotFound {
		t.Errorf("unknown language: %d", p.status)
	}
	// The API's texts do not change with the language.
	for _, accept := range []string{"ja", "en"} {
		req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(`{"AccessName":"alice","AccessKey":"wrong","action":"Auth"}`))
		req.Header.Set("Accept-Language", accept)
		req.AddCookie(&http.Cookie{Name: "certorder_lang", Value: "ja"})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got := read(t, resp)
		if strings.TrimSpace(got.body) != `{"error_message":"Error(111) AccessName is failed."}` {
			t.Errorf("API in %s: %s", accept, got.body)
		}
	}
}

// Every page answers in both languages without a missing string (a
// missing one fails the page with 500).
func TestWebEveryPageInEveryLanguage(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	for _, lang := range []string{"en", "ja"} {
		b := newBrowser(t, base, headerTransport{"Accept-Language": lang})
		if p := b.get("/signin?expired=1"); p.status != 200 {
			t.Errorf("%s sign-in: %d", lang, p.status)
		}
		b.signIn("alice", f.aliceKey)
		id := keyIDOf(t, f.aliceKey)
		for _, path := range []string{"/orders", "/orders?renewed=1&sort=expiry", "/orders/1001", "/orders/1003", "/orders/999",
			"/timeline", "/keys", "/keys/" + id + "/revoke", "/orders.csv", "/nope"} {
			p := b.get(path)
			if p.status != 200 && p.status != 404 {
				t.Errorf("%s %s: %d", lang, path, p.status)
			}
			if strings.Contains(p.body, "web: no message") {
				t.Errorf("%s %s: a missing message", lang, path)
			}
		}
		if p, text := b.createKey(fmt.Sprintf("%s key", lang)); text == "" {
			t.Errorf("%s key created page: %d", lang, p.status)
		}
		if p := b.post("/keys", url.Values{"label": {"x"}}); p.status != http.StatusForbidden || !strings.Contains(p.body, `lang="`+lang+`"`) {
			t.Errorf("%s error page: %d", lang, p.status)
		}
	}
}

// The CSV's formula guard covers what spreadsheets evaluate beyond a
// leading = + - @: after leading spaces or line breaks, and the full-width
// and small forms.
func TestWebCSVFormulaVariants(t *testing.T) {
	t.Parallel()
	f, base := webFixture(t, server.Config{})
	names := []string{" =1+1", "\n=1+1", "\u3000=1+1", "＝1+1", "＋1+1", "－1+1", "＠SUM(1)", "﹦1+1", "\t1", "plain", "a=b"}
	var docs []string
	for i, n := range names {
		q, _ := json.Marshal(n)
		docs = append(docs, strings.Replace(storetest.OrderJSON(int64(9100+i), 0, "2027-01-20"),
			fmt.Sprintf(`"common_name":"host%d.example.com"`, 9100+i), `"common_name":`+string(q), 1))
	}
	if _, err := f.store.ImportOrders(context.Background(), "alice", storetest.Orders(t, docs...)); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base, nil)
	b.signIn("alice", f.aliceKey)
	got := map[string]string{}
	for _, r := range readCSV(t, b.get("/orders.csv?q=&sort=order"))[1:] {
		got[r[0]] = r[1]
	}
	for i, n := range names {
		want := "'" + n
		if n == "plain" || n == "a=b" {
			want = n
		}
		if c := got[strconv.Itoa(9100+i)]; c != want {
			t.Errorf("common name %q: the CSV cell is %q, want %q", n, c, want)
		}
	}
}
