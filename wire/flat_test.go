package wire

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/certorder/certorder/internal/jsonscan"
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

// flatValid is flatMembers's answer alone.
func flatValid(b []byte) bool { return flatMembers(b, func(_, _ []byte) {}) }

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

// flatMembers sees, in a body it accepts, the members jsonscan.EachMember
// sees once json.Valid has accepted it: the same names (as written: a
// flat name has no escapes; one of invalid UTF-8, which encoding/json
// would read with U+FFFD, matches no name the request has either way) and
// the same values.
func FuzzFlatMembers(f *testing.F) {
	for _, c := range flatCases {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		type member struct{ name, value string }
		var got, want []member
		if !flatMembers(b, func(k, v []byte) { got = append(got, member{string(k), string(v)}) }) {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("flatMembers accepts %q, json.Valid does not", b)
		}
		jsonscan.EachMember(bytes.TrimSpace(b), func(k, v []byte) { want = append(want, member{string(k), string(v)}) })
		if len(got) != len(want) {
			t.Fatalf("%q: members %q, jsonscan sees %q", b, got, want)
		}
		for i := range got {
			if got[i].value != want[i].value || utf8.ValidString(got[i].name) && got[i].name != want[i].name {
				t.Fatalf("%q: members %q, jsonscan sees %q", b, got, want)
			}
		}
	})
}

// decodeBefore is DecodeRequest as it was before flatMembers read the
// body (json.Valid, or flatValid, then jsonscan): DecodeRequest must
// decode every body as it did.
func decodeBefore(body []byte) (Request, *Failure) {
	var req Request
	body = bytes.Trim(body, " \t\r\n")
	if len(body) == 0 || body[0] != '{' || !flatValid(body) && !json.Valid(body) {
		return req, Fail(MalformedRequest)
	}
	var okName, okKey bool
	jsonscan.EachMember(body, func(key, value []byte) {
		switch string(key) {
		case "AccessName":
			req.AccessName, okName = jsonString(value)
		case "AccessKey":
			req.AccessKey, okKey = jsonString(value)
		case "action":
			req.Action, req.ActionOK = jsonString(value)
		case "orderId":
			req.OrderID = value
		}
	})
	req.CredsOK = okName && okKey && req.AccessName != "" && req.AccessKey != ""
	return req, nil
}

func FuzzDecodeRequest(f *testing.F) {
	for _, c := range flatCases {
		f.Add([]byte(c.body))
	}
	for _, s := range []string{
		`{"AccessName":"a","AccessKey":"k","action":"OrderInfo","orderId":42}`,
		` {"AccessName":"a","AccessKey":"k","action":"Auth","action":"RenewCheck","orderId":"42"} `,
		`{"Access\u004eame":"a","AccessKey":"k","action":"Auth"}`,
		`{"AccessName":"\u00e9","AccessKey":"k","action":"Au\u0074h"}`,
		"{\"AccessName\":\"a\xff\",\"AccessKey\":\"k\",\"action\":\"Auth\xff\"}",
		`{"AccessName":null,"AccessKey":1,"action":true,"orderId":{"a":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gotF := DecodeRequest(b)
		want, wantF := decodeBefore(b)
		if (gotF == nil) != (wantF == nil) || gotF != nil && *gotF != *wantF {
			t.Fatalf("%q: failure %v, was %v", b, gotF, wantF)
		}
		if got.AccessName != want.AccessName || got.AccessKey != want.AccessKey || got.Action != want.Action ||
			!bytes.Equal(got.OrderID, want.OrderID) || got.CredsOK != want.CredsOK || got.ActionOK != want.ActionOK {
			t.Fatalf("%q: %+v, was %+v", b, got, want)
		}
	})
}

func BenchmarkDecodeRequest(b *testing.B) {
	body := []byte(`{"AccessName":"bench","AccessKey":"cok_0123456789ab_abcdefghijklmnopqrstuvwxyz0123456789abcd","action":"OrderInfo","orderId":123456}`)
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeBefore(body)
		}
	})
	b.Run("one pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			DecodeRequest(body)
		}
	})
}
