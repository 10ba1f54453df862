package wire_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/orderdoc"
	"github.com/certorder/certorder/wire"
)

// Every failure answer, byte for byte, as docs/API.md and the spec write
// them: literals, not built from the catalogue, so a wrong text fails here.
func TestFailureBodies(t *testing.T) {
	for _, tc := range []struct {
		code    wire.Code
		body    string
		status  int
		outcome string
	}{
		{code: 100, body: `{"error_message":"Error(100) request is failed."}`, status: 400, outcome: "malformed_request"},
		{code: 101, body: `{"error_message":"Error(101) method is failed."}`, status: 405, outcome: "method_not_allowed"},
		{code: 102, body: `{"error_message":"Error(102) path is failed."}`, status: 404, outcome: "unknown_path"},
		{code: 110, body: `{"error_message":"Error(110) AccessName is failed."}`, status: 400, outcome: "credentials_missing"},
		{code: 111, body: `{"error_message":"Error(111) AccessName is failed."}`, status: 401, outcome: "credentials_rejected"},
		{code: 120, body: `{"error_message":"Error(120) action is failed."}`, status: 400, outcome: "unknown_action"},
		{code: 130, body: `{"error_message":"Error(130) orderId is failed."}`, status: 400, outcome: "bad_order_id"},
		{code: 131, body: `{"error_message":"Error(131) orderId is failed."}`, status: 404, outcome: "no_such_order"},
		{code: 132, body: `{"error_message":"Error(132) orderId is failed."}`, status: 404, outcome: "not_renewed"},
		{code: 140, body: `{"error_message":"Error(140) rate limit is exceeded."}`, status: 429, outcome: "rate_limited"},
		{code: 160, body: `{"error_message":"Error(160) serial_number is failed."}`, status: 400, outcome: "bad_serial_number"},
		{code: 161, body: `{"error_message":"Error(161) serial_number is failed."}`, status: 404, outcome: "no_such_serial_number"},
		{code: 162, body: `{"error_message":"Error(162) thumbprint is failed."}`, status: 400, outcome: "bad_thumbprint"},
		{code: 163, body: `{"error_message":"Error(163) thumbprint is failed."}`, status: 404, outcome: "no_such_thumbprint"},
		{code: 150, body: `{"error_message":"Error(150) service is unavailable."}`, status: 503, outcome: "unavailable"},
		{code: 190, body: `{"error_message":"Error(190) internal error."}`, status: 500, outcome: "internal"},
	} {
		if got := string(wire.AppendFailure(nil, tc.code)); got != tc.body+"\n" {
			t.Errorf("%d: body %s, want %s", tc.code, got, tc.body)
		}
		if got := tc.code.Status(); got != tc.status {
			t.Errorf("%d: status %d, want %d", tc.code, got, tc.status)
		}
		if got := tc.code.Outcome(); got != tc.outcome {
			t.Errorf("%d: outcome %s, want %s", tc.code, got, tc.outcome)
		}
	}
	if n := len(wire.Codes()); n != 16 {
		t.Errorf("the catalogue has %d numbers; the table above has 16: pin the new one", n)
	}
}

func TestParseOrderID(t *testing.T) {
	for raw, want := range map[string]int64{
		`1`: 1, `"42"`: 42, `9223372036854775807`: 1<<63 - 1, `"007"`: 7,
		`0`: 0, `-1`: 0, `1.0`: 0, `1e2`: 0, `9223372036854775808`: 0, `true`: 0, `null`: 0,
		`""`: 0, `" 1"`: 0, `"1 "`: 0, `"+1"`: 0, `{}`: 0, `[1]`: 0, ``: 0, `"`: 0,
		`"\u0031001"`: 0, // taken literally: an escape is not a digit (docs/API.md)
	} {
		got, ok := wire.ParseOrderID([]byte(raw))
		if got != want || ok != (want != 0) {
			t.Errorf("ParseOrderID(%s) = %d, %v; want %d", raw, got, ok, want)
		}
	}
}

func TestDecodeRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		ok         bool // decoded, not failure 100
		creds      bool
		action     string
	}{
		{name: "plain", body: `{"AccessName":"a","AccessKey":"k","action":"Auth"}`, ok: true, creds: true, action: "Auth"},
		{name: "JSON whitespace around", body: " \t\r\n{\"AccessName\":\"a\",\"AccessKey\":\"k\"}\n", ok: true, creds: true},
		{name: "escaped name", body: `{"Access\u004eame":"a","AccessKey":"k"}`, ok: true, creds: true},
		{name: "last of a repeated name", body: `{"AccessName":1,"AccessName":"a","AccessKey":"k"}`, ok: true, creds: true},
		{name: "empty key", body: `{"AccessName":"a","AccessKey":""}`, ok: true},
		{name: "case matters", body: `{"accessname":"a","AccessKey":"k"}`, ok: true},
		{name: "action a number", body: `{"action":1}`, ok: true},
		{name: "form feed", body: "\f{}"},
		{name: "vertical tab", body: "{}\v"},
		{name: "no-break space", body: "\u00a0{}"},
		{name: "next line", body: "{}\u0085"},
		{name: "line separator", body: "\u2028{}"},
		{name: "ideographic space", body: "{}\u3000"},
		{name: "array", body: `[{}]`},
		{name: "two objects", body: `{}{}`},
		{name: "empty", body: ``},
	} {
		req, f := wire.DecodeRequest([]byte(tc.body))
		if (f == nil) != tc.ok || f != nil && f.Code != wire.MalformedRequest {
			t.Errorf("%s: failure %v, want ok %v", tc.name, f, tc.ok)
			continue
		}
		if req.CredsOK != tc.creds || req.Action != tc.action {
			t.Errorf("%s: %+v", tc.name, req)
		}
	}
}

// The answer is the document with the derived fields spliced back in; an
// empty certificate object still makes valid JSON.
func TestAppendOrderInfo(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ in, want string }{
		{`{"OrderId":5,"certificate":{"valid_till":"2030-01-11"}}`,
			`{"OrderId":5,"certificate":{"valid_till":"2030-01-11","days_remaining":10},"is_renewed":false}`},
		{`{"certificate":{"valid_till":"2029-12-31", "days_remaining": 99},"OrderId":5,"is_renewed":true,"was_renewed_by_order_id":6, "x": [ 1, "2" ]}`,
			`{"certificate":{"valid_till":"2029-12-31","days_remaining":-1},"OrderId":5,"x":[1,"2"],"is_renewed":true,"was_renewed_by_order_id":6}`},
		// Not issued: no valid_till, so no days_remaining (one imported is dropped).
		{`{"OrderId":5,"certificate":{},"status":"pending"}`,
			`{"OrderId":5,"certificate":{},"status":"pending","is_renewed":false}`},
		{`{"OrderId":5,"certificate":{"common_name":"a.example","days_remaining":3},"status":"needs_approval"}`,
			`{"OrderId":5,"certificate":{"common_name":"a.example"},"status":"needs_approval","is_renewed":false}`},
	} {
		o, err := orderdoc.Parse([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		got := string(wire.AppendOrderInfo(nil, o, now))
		if got != tc.want || !json.Valid([]byte(got)) {
			t.Errorf("AppendOrderInfo(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// CertificateCheck's parameters: hexadecimal in any case, colons and
// spaces ignored; a serial's leading zeros too; exactly one of the two, a
// null one not given.
func TestParseCertificateKey(t *testing.T) {
	thumb := "A1B2C3D4E5F60718293A4B5C6D7E8F9001122334"
	for _, tc := range []struct {
		serial, thumbprint string // raw JSON; "" for absent
		want               wire.CertificateKey
	}{
		{`"0A1B2C"`, "", wire.CertificateKey{Key: "a1b2c"}},
		{`"0a:1b:2c"`, "", wire.CertificateKey{Key: "a1b2c"}},
		{`"0A 1B 2C"`, "", wire.CertificateKey{Key: "a1b2c"}},
		{`"000a1b2c"`, "", wire.CertificateKey{Key: "a1b2c"}},
		{`"\u0030A1B2C"`, "", wire.CertificateKey{Key: "a1b2c"}}, // a string, as JSON decodes it
		{`"` + strings.Repeat("f", 40) + `"`, "", wire.CertificateKey{Key: strings.Repeat("f", 40)}},
		{`"` + strings.Repeat("f", 41) + `"`, "", wire.CertificateKey{}}, // over 20 octets
		{`"00"`, "", wire.CertificateKey{}},
		{`""`, "", wire.CertificateKey{}},
		{`"0x0A"`, "", wire.CertificateKey{}},
		{`"0A-1B"`, "", wire.CertificateKey{}},
		{`"g1"`, "", wire.CertificateKey{}},
		{`10`, "", wire.CertificateKey{}},                                                               // a number, not a string
		{`null`, "", wire.CertificateKey{}},                                                             // neither
		{`null`, `"` + thumb + `"`, wire.CertificateKey{Thumbprint: true, Key: strings.ToLower(thumb)}}, // null is not given
		{`"0A"`, `null`, wire.CertificateKey{Key: "a"}},                                                 // null is not given
		{`null`, `null`, wire.CertificateKey{}},                                                         // neither
		{"", `null`, wire.CertificateKey{}},                                                             // neither (160, not 162)
		{"", `"` + thumb + `"`, wire.CertificateKey{Thumbprint: true, Key: strings.ToLower(thumb)}},
		{"", `"` + strings.ToLower(thumb) + `"`, wire.CertificateKey{Thumbprint: true, Key: strings.ToLower(thumb)}},
		{"", `"A1:B2:C3:D4:E5:F6:07:18:29:3A:4B:5C:6D:7E:8F:90:01:12:23:34"`, wire.CertificateKey{Thumbprint: true, Key: strings.ToLower(thumb)}},
		{"", `"A1 B2 C3 D4 E5 F6 07 18 29 3A 4B 5C 6D 7E 8F 90 01 12 23 34"`, wire.CertificateKey{Thumbprint: true, Key: strings.ToLower(thumb)}},
		{"", `"` + thumb[2:] + `"`, wire.CertificateKey{Thumbprint: true}},                           // 38 digits
		{"", `"` + thumb + thumb[:24] + `"`, wire.CertificateKey{Thumbprint: true}},                  // a SHA-256 one
		{"", `"` + strings.Replace(thumb, "A", "Z", 1) + `"`, wire.CertificateKey{Thumbprint: true}}, // not hex
		{`"0A"`, `"` + thumb + `"`, wire.CertificateKey{}},                                           // both
		{"", "", wire.CertificateKey{}}, // neither
	} {
		var serial, thumbprint []byte
		if tc.serial != "" {
			serial = []byte(tc.serial)
		}
		if tc.thumbprint != "" {
			thumbprint = []byte(tc.thumbprint)
		}
		if got := wire.ParseCertificateKey(serial, thumbprint); got != tc.want {
			t.Errorf("ParseCertificateKey(%s, %s) = %+v, want %+v", tc.serial, tc.thumbprint, got, tc.want)
		}
	}
}
