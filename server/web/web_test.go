package web

import (
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
)

// The one rule behind every page and the CSV: an order whose renewal is
// issued is never expired or expiring, whatever its days (one whose
// renewal is pending is: its certificate is still the one in use); one
// without valid_till is awaiting issuance, or will never be issued, and has
// no days.
func TestRenewedNeverExpiring(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	h := &handler{cfg: Config{Windows: certorder.DefaultWindows}}
	RenewalWindow := certorder.DefaultWindows.Reissue
	for _, tc := range []struct {
		days    int
		renewed bool
		want    Expiry
	}{
		{-3650, true, Renewed},
		{-1, true, Renewed},
		{0, true, Renewed},
		{1, true, Renewed},
		{RenewalWindow, true, Renewed},
		{RenewalWindow + 1, true, Renewed},
		{400, true, Renewed},
		{-3650, false, Expired},
		{-1, false, Expired},
		{0, false, Expiring}, // its last day
		{1, false, Expiring},
		{RenewalWindow, false, Expiring},
		{RenewalWindow + 1, false, Valid},
		{400, false, Valid},
	} {
		o := &certorder.Order{Status: "issued", Certificate: certorder.Certificate{ValidTill: now.AddDate(0, 0, tc.days).Format(time.DateOnly)}}
		if tc.renewed {
			o.RenewedBy, o.Renewal = 9, certorder.RenewalIssued
		}
		if got, days := h.expiryOf(o, now); got != tc.want || days != tc.days {
			t.Errorf("expiryOf(%d, renewed %v) = %s, %d days; want %s", tc.days, tc.renewed, got, days, tc.want)
		}
	}
	for _, tc := range []struct {
		status    string
		renewedBy int64
		want      Expiry
	}{
		{"pending", 0, Pending},
		{"needs_approval", 0, Pending},
		{"a_status_not_known_yet", 0, Pending},
		{"canceled", 0, Ended},
		{"rejected", 0, Ended},
		{"pending", 9, Renewed},
	} {
		o := &certorder.Order{Status: tc.status, RenewedBy: tc.renewedBy}
		if tc.renewedBy != 0 {
			o.Renewal = certorder.RenewalIssued
		}
		if got, days := h.expiryOf(o, now); got != tc.want || days != 0 {
			t.Errorf("expiryOf(%s without valid_till) = %s, %d days; want %s", tc.status, got, days, tc.want)
		}
	}
	// A renewal not issued yet leaves the certificate's end as it is.
	o := &certorder.Order{Status: "issued", RenewedBy: 9, Renewal: certorder.RenewalPending,
		Certificate: certorder.Certificate{ValidTill: now.AddDate(0, 0, 14).Format(time.DateOnly)}}
	if got, days := h.expiryOf(o, now); got != Expiring || days != 14 {
		t.Errorf("expiryOf(renewal pending, 14 days) = %s, %d; want expiring", got, days)
	}
}

// Cells a spreadsheet would run as formulas get a leading apostrophe.
func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "",
		"example.com":           "example.com",
		"=HYPERLINK(\"x\")":     "'=HYPERLINK(\"x\")",
		"+1+1":                  "'+1+1",
		"-2+3":                  "'-2+3",
		"@SUM(A1)":              "'@SUM(A1)",
		"\t=1":                  "'\t=1",
		"\r=1":                  "'\r=1",
		"-5":                    "-5", // a number of days, not a formula
		"12":                    "12",
		"a=b":                   "a=b",
		"-cmd|' /C calc'!A0":    "'-cmd|' /C calc'!A0",
		"=cmd|' /C calc'!A0 名前": "'=cmd|' /C calc'!A0 名前",
		// Invisible characters before the formula: skipped by some spreadsheets.
		"\u200b=1+1":          "'\u200b=1+1",
		"\ufeff=HYPERLINK(1)": "'\ufeff=HYPERLINK(1)",
		"\x1c=1+1":            "'\x1c=1+1",
		"\u2060 @SUM(A1)":     "'\u2060 @SUM(A1)",
		"\u200bexample":       "\u200bexample",
	} {
		if got := csvCell(in); got != want {
			t.Errorf("csvCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// The https-or-loopback rule holds for the template itself, whatever the
// order number: {orderId} may not stand in the scheme, user or host.
func TestCheckACMEURLTemplate(t *testing.T) {
	for tmpl, ok := range map[string]bool{
		"https://one.digicert.com/mpki/api/v1/acme/v2/directory?action=renew&orderId={orderId}": true,
		"http://127.0.0.1:14000/dir/{orderId}?orderId={orderId}#{orderId}":                      true,
		"http://[::1]/d?orderId={orderId}":                                                      true,
		"https://acme.example/directory?orderId=1":                                              false, // no {orderId}
		"http://acme.example/directory?orderId={orderId}":                                       false, // http off loopback
		"http://[::{orderId}]/d?orderId={orderId}":                                              false, // [::1] for order 1, [::1002] for 1002
		"http://127.0.0.{orderId}/d":                                                            false,
		"http://localhost:{orderId}/d":                                                          false,
		"https://{orderId}.acme.example/d":                                                      false,
		"https://u{orderId}@acme.example/d":                                                     false,
		"http{orderId}://acme.example/d":                                                        false,
	} {
		if err := CheckACMEURLTemplate(tmpl); (err == nil) != ok {
			t.Errorf("CheckACMEURLTemplate(%q) = %v, want ok %v", tmpl, err, ok)
		}
	}
}

// The language switch goes back only to a path of this site.
func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/orders?page=2":           "/orders?page=2",
		"/":                        "/",
		"":                         "/",
		"//evil.example/":          "/",
		"/\\evil.example":          "/",
		"https://evil.example/":    "/",
		"javascript:alert(1)":      "/",
		"/orders\r\nSet-Cookie: x": "/",
		"/orders\x00x":             "/",
		"/orders?q=\x1b[2J":        "/",
		"/a\x7f":                   "/",
		"/a b":                     "/",
		"/orders?q=%1B":            "/orders?q=%1B",   // escaped: as the links write it
		"/webhooks/1?x=é":          "/webhooks/1?x=é", // http.Redirect escapes what is not ASCII
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every key the templates and the Go code name is in every catalogue, and
// each language's message takes the same arguments as English's.
func TestCatalogues(t *testing.T) {
	cats, err := loadCatalogues()
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	templateKey := regexp.MustCompile(`\{\{[^}]*?\b(t|n) "([a-z0-9_.]+)"`)
	err = fs.WalkDir(templateFiles, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(templateFiles, path)
		for _, m := range templateKey.FindAllStringSubmatch(string(b), -1) {
			if m[1] == "n" {
				used[m[2]+".one"], used[m[2]+".other"] = true, true
			} else {
				used[m[2]] = true
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	goKey := regexp.MustCompile(`\b(?:S|T|errorPage\([^"]*)\("?([a-z]+\.[a-z0-9_.]+)"`)
	files, _ := fs.Glob(os.DirFS("."), "*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goKey.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
		for _, m := range regexp.MustCompile(`"((?:sort|error|keys|webhooks?)\.[a-z0-9_.]+)"`).FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
	}
	if len(used) < 100 {
		t.Fatalf("found only %d keys in use: the scan is broken", len(used))
	}
	verbs := regexp.MustCompile(`%(\[\d\])?[a-z]`)
	kinds := func(s string) []string {
		var v []string
		for _, m := range verbs.FindAllString(s, -1) {
			v = append(v, m[len(m)-1:])
		}
		slices.Sort(v)
		return v
	}
	for lang, c := range cats {
		for key := range used {
			if _, ok := c.messages[key]; !ok {
				t.Errorf("catalogue %s lacks %q", lang, key)
			}
		}
		for key, m := range c.messages {
			if en := cats["en"].messages[key]; !slices.Equal(kinds(m), kinds(en)) {
				t.Errorf("%s %q takes %v, English %v", lang, key, kinds(m), kinds(en))
			}
		}
	}
}

// The timeline's months are all the same width, so the HTML axis of 13
// equal columns lines up with the bars.
func TestTimelineScale(t *testing.T) {
	sc := timelineScale{start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		day  time.Time
		want float64
	}{
		{time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 0},
		{time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), 0}, // before: clamped
		{time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), timelineWidth / 13},
		{time.Date(2027, 2, 15, 0, 0, 0, 0, time.UTC), (3 + 14.0/28) * timelineWidth / 13},
		{time.Date(2027, 12, 1, 0, 0, 0, 0, time.UTC), timelineWidth},
		{time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC), timelineWidth}, // after: clamped
	} {
		if got := sc.x(tc.day); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("x(%s) = %f, want %f", tc.day.Format(time.DateOnly), got, tc.want)
		}
	}
}

// A period says "not stated" once, and which end is missing when one is.
func TestPeriod(t *testing.T) {
	cats, err := loadCatalogues()
	if err != nil {
		t.Fatal(err)
	}
	day := func(s string) client.Time {
		d, _ := time.Parse("2006-01-02", s)
		return client.Time{Time: d, Raw: s}
	}
	from, till, none := day("2026-03-01"), day("2027-03-01"), client.Time{}
	for _, tc := range []struct {
		lang       string
		from, till client.Time
		want       string
	}{
		{"en", from, till, "1 Mar 2026 to 1 Mar 2027"},
		{"en", none, none, "not stated"},
		{"en", from, none, "from 1 Mar 2026 (end not stated)"},
		{"en", none, till, "until 1 Mar 2027 (start not stated)"},
		{"ja", none, none, "記載なし"},
	} {
		if got := cats[tc.lang].Period(tc.from, tc.till); got != tc.want {
			t.Errorf("%s Period(%q, %q) = %q, want %q", tc.lang, tc.from.Raw, tc.till.Raw, got, tc.want)
		}
	}
}
