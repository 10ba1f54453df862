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

// The one rule behind every page and the CSV: a renewed order is never
// expired or expiring, whatever its days; one without valid_till is
// awaiting issuance, or will never be issued, and has no days.
func TestRenewedNeverExpiring(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
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
		o := &certorder.Order{Status: "issued", ValidTill: now.AddDate(0, 0, tc.days).Format(time.DateOnly)}
		if tc.renewed {
			o.RenewedBy = 9
		}
		if got, days := expiryOf(o, now); got != tc.want || days != tc.days {
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
		if got, days := expiryOf(&certorder.Order{Status: tc.status, RenewedBy: tc.renewedBy}, now); got != tc.want || days != 0 {
			t.Errorf("expiryOf(%s without valid_till) = %s, %d days; want %s", tc.status, got, days, tc.want)
		}
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
	} {
		if got := csvCell(in); got != want {
			t.Errorf("csvCell(%q) = %q, want %q", in, got, want)
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
