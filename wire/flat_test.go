package wire

import (
	"encoding/json"
	"testing"
)

var flatCases = []struct {
	body string
	flat bool // flatValid's answer; json.Valid must agree whenever it is true
}{
	{`{}`, true},
	{` { } `, true},
	{`{"AccessName":"bench","AccessKey":"cok_0123456789ab_x","action":"OrderInfo","orderId":42}`, true},
	{"{\n\t\"a\" : \"b\" ,\r\n \"n\": -0.5e+10, \"t\":true,\"f\":false,\"z\":null}", true},
	{`{"orderId":"42"}`, true},
	{`{"a":"\u0041"}`, false}, // escapes: json.Valid decides
	{`{"a":{"b":1}}`, false},  // nesting: json.Valid decides
	{`{"a":[1]}`, false},
	{`{"a":1,}`, false},
	{`{"a":1}}`, false},
	{`{"a":1`, false},
	{`{"a" 1}`, false},
	{`{a:1}`, false},
	{`{"a":01}`, false},
	{`{"a":1.}`, false},
	{`{"a":.5}`, false},
	{`{"a":1e}`, false},
	{`{"a":-}`, false},
	{`{"a":tru}`, false},
	{`{"a":nulls}`, false},
	{"{\"a\":\"x\x01\"}", false},
	{`{"a":"b"} x`, false},
	{`{,}`, false},
	{``, false},
	{`[]`, false},
}

func TestFlatValid(t *testing.T) {
	for _, c := range flatCases {
		if got := flatValid([]byte(c.body)); got != c.flat {
			t.Errorf("flatValid(%q) = %v, want %v", c.body, got, c.flat)
		}
		if c.flat && !json.Valid([]byte(c.body)) {
			t.Errorf("case %q: flat but not valid JSON", c.body)
		}
	}
}

// flatValid never accepts what json.Valid refuses.
func FuzzFlatValid(f *testing.F) {
	for _, c := range flatCases {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if flatValid(b) && !json.Valid(b) {
			t.Fatalf("flatValid accepts %q, json.Valid does not", b)
		}
	})
}

func BenchmarkRequestValid(b *testing.B) {
	body := []byte(`{"AccessName":"bench","AccessKey":"cok_0123456789ab_abcdefghijklmnopqrstuvwxyz0123456789abcd","action":"OrderInfo","orderId":123456}`)
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(body)
		}
	})
	b.Run("flatValid", func(b *testing.B) {
		for b.Loop() {
			flatValid(body)
		}
	})
}
