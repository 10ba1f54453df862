package certorder_test

import (
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/certorder/certorder"
)

func TestDaysRemaining(t *testing.T) {
	now := time.Date(2026, 3, 10, 23, 59, 0, 0, time.FixedZone("JST", 9*3600)) // 14:59 UTC
	for _, tc := range []struct {
		till string
		want int
	}{
		{"2026-03-10", 0},
		{"2026-03-11", 1},
		{"2026-03-09", -1},
		{"2027-03-10", 365},
		{"2024-02-29", -740},
	} {
		if got := certorder.DaysRemaining(tc.till, now); got != tc.want {
			t.Errorf("DaysRemaining(%s) = %d, want %d", tc.till, got, tc.want)
		}
	}
}

func TestParseOrderID(t *testing.T) {
	for raw, want := range map[string]int64{
		`1`: 1, `"42"`: 42, `9223372036854775807`: 1<<63 - 1, `"007"`: 7,
		`0`: 0, `-1`: 0, `1.0`: 0, `1e2`: 0, `9223372036854775808`: 0, `true`: 0, `null`: 0,
		`""`: 0, `" 1"`: 0, `"1 "`: 0, `"+1"`: 0, `{}`: 0, `[1]`: 0, ``: 0, `"`: 0,
	} {
		got, ok := certorder.ParseOrderID([]byte(raw))
		if got != want || ok != (want != 0) {
			t.Errorf("ParseOrderID(%s) = %d, %v; want %d", raw, got, ok, want)
		}
	}
}

func TestParseOrderRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"not an object":      `[1]`,
		"no OrderId":         `{"certificate":{"valid_till":"2030-01-01"}}`,
		"OrderId string":     `{"OrderId":"5","certificate":{"valid_till":"2030-01-01"}}`,
		"OrderId fraction":   `{"OrderId":5.5,"certificate":{"valid_till":"2030-01-01"}}`,
		"no certificate":     `{"OrderId":5}`,
		"certificate array":  `{"OrderId":5,"certificate":[]}`,
		"no valid_till":      `{"OrderId":5,"certificate":{}}`,
		"bad valid_till":     `{"OrderId":5,"certificate":{"valid_till":"01/01/2030"}}`,
		"dns_names a string": `{"OrderId":5,"certificate":{"valid_till":"2030-01-01","dns_names":"a.example"}}`,
		"duplicate field":    `{"OrderId":5,"OrderId":6,"certificate":{"valid_till":"2030-01-01"}}`,
		"renewed, no order":  `{"OrderId":5,"is_renewed":true,"certificate":{"valid_till":"2030-01-01"}}`,
		"order, not renewed": `{"OrderId":5,"is_renewed":false,"was_renewed_by_order_id":6,"certificate":{"valid_till":"2030-01-01"}}`,
		"renews itself":      `{"OrderId":5,"is_renewed":true,"was_renewed_by_order_id":5,"certificate":{"valid_till":"2030-01-01"}}`,
		"status a number":    `{"OrderId":5,"status":1,"certificate":{"valid_till":"2030-01-01"}}`,
		"trailing data":      `{"OrderId":5,"certificate":{"valid_till":"2030-01-01"}} x`,
	} {
		if _, err := certorder.ParseOrder([]byte(doc)); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
}

// The answer is the document with the derived fields put back; an empty
// certificate object still makes valid JSON.
func TestAppendJSON(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ in, want string }{
		{`{"OrderId":5,"certificate":{"valid_till":"2030-01-11"}}`,
			`{"OrderId":5,"certificate":{"valid_till":"2030-01-11","days_remaining":10},"is_renewed":false}`},
		{`{"certificate":{"valid_till":"2029-12-31", "days_remaining": 99},"OrderId":5,"is_renewed":true,"was_renewed_by_order_id":6, "x": [ 1, "2" ]}`,
			`{"certificate":{"valid_till":"2029-12-31","days_remaining":-1},"OrderId":5,"x":[1,"2"],"is_renewed":true,"was_renewed_by_order_id":6}`},
	} {
		o, err := certorder.ParseOrder([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		got := string(o.AppendJSON(nil, now))
		if got != tc.want || !json.Valid([]byte(got)) {
			t.Errorf("AppendJSON(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestDecodeOrders(t *testing.T) {
	count := func(input string) (int, error) {
		n := 0
		for _, err := range certorder.DecodeOrders(strings.NewReader(input)) {
			if err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	one := `{"OrderId":5,"certificate":{"valid_till":"2030-01-01"}}`
	for input, want := range map[string]int{one: 1, " \n" + one + "\n": 1, "[]": 0, "[" + one + "," + one + "]": 2} {
		if n, err := count(input); err != nil || n != want {
			t.Errorf("%q: %d orders, %v; want %d", input, n, err, want)
		}
	}
	for _, input := range []string{"", "5", "[" + one + ",", one + one, "[" + one + "] x", "[1]", `{"OrderId":`} {
		if _, err := count(input); !errors.Is(err, certorder.ErrInvalid) {
			t.Errorf("%q: err %v, want ErrInvalid", input, err)
		}
	}
}

func TestKeys(t *testing.T) {
	text, k, err := certorder.NewKey("x")
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := certorder.NewKey("x")
	if id, ok := certorder.KeyID(text); !ok || id != k.ID || text == other {
		t.Fatalf("KeyID(%s) = %s, %v; key ID %s", text, id, ok, k.ID)
	}
	if strings.Contains(string(k.Hash), text) || len(k.Hash) != 32 {
		t.Fatal("key hash is not a SHA-256")
	}
	for _, bad := range []string{"", "cok_", "cok_abc_def", "xyz_0123456789ab_secret", "cok_0123456789ab_", "cok_0123456789aG_x", "cok_01234567\x0089a_x"} {
		if _, ok := certorder.KeyID(bad); ok {
			t.Errorf("KeyID(%q) accepted", bad)
		}
	}
}

// A consumer that stops early does not leave the reading goroutine stuck.
func TestDecodeOrdersStopEarly(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := 1; i <= 2000; i++ {
		if i > 1 {
			b.WriteString(",")
		}
		b.WriteString(`{"OrderId":` + strconv.Itoa(i) + `,"certificate":{"valid_till":"2030-01-01"}}`)
	}
	b.WriteString("]")
	before := runtime.NumGoroutine()
	for range 10 {
		for o, err := range certorder.DecodeOrders(strings.NewReader(b.String())) {
			if err != nil || o.ID != 1 {
				t.Fatal(o, err)
			}
			break
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before, %d after", before, after)
	}
}

func TestAuditEntryTrimmed(t *testing.T) {
	e := certorder.AuditEntry{Member: strings.Repeat("é", 40), Action: "a\x00b\xffc"}.Trimmed()
	if len(e.Member) != 64 || !utf8.ValidString(e.Member) || e.Action != "a\uFFFDb\uFFFDc" {
		t.Fatalf("Trimmed = %q, %q", e.Member, e.Action)
	}
}
