package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// eachMember must see exactly what encoding/json sees in a valid object:
// the same names, unescaped, and the same values (last one wins).
func checkEachMember(t *testing.T, body []byte) {
	if !json.Valid(body) || len(bytes.TrimSpace(body)) == 0 || bytes.TrimSpace(body)[0] != '{' {
		return
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("valid JSON did not decode: %v", err)
	}
	got := map[string][]byte{}
	EachMember(bytes.TrimSpace(body), func(k, v []byte) { got[string(k)] = v })
	if len(got) != len(want) {
		t.Fatalf("%s: %d members, encoding/json finds %d", body, len(got), len(want))
	}
	for k, w := range want {
		var a, b bytes.Buffer
		if err := json.Compact(&a, got[k]); err != nil {
			t.Fatalf("%s: member %q: value %q is not JSON: %v", body, k, got[k], err)
		}
		json.Compact(&b, w)
		if a.String() != b.String() {
			t.Fatalf("%s: member %q = %s, want %s", body, k, a.String(), b.String())
		}
	}
}

var memberSeeds = []string{
	`{}`,
	` { "AccessName" : "alice" , "orderId" : 1001 } `,
	`{"orderId":1001}`,
	"{\"a\":[1,{\"b\":\"}\"}],\n\"c\":\"x\\\"y\",\"d\":null,\"e\":true,\"f\":-1.5e3}",
	`{"Access\u004eame":"bob","AccessName":"carol"}`,
	`{"k":{"nested":{"deep":[[],{}]}},"l":"\\","m":"\u00e9"}`,
	`{"a":"1","a":"2"}`,
}

func TestEachMember(t *testing.T) {
	for _, s := range memberSeeds {
		checkEachMember(t, []byte(s))
	}
	// A value's trailing spaces are not part of it.
	EachMember([]byte(`{"orderId": 1001 ,"x":2}`), func(k, v []byte) {
		if string(k) == "orderId" && string(v) != "1001" {
			t.Errorf("orderId value %q", v)
		}
	})
}

func FuzzEachMember(f *testing.F) {
	for _, s := range memberSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkEachMember)
}

// TrimSpace trims JSON's four whitespace bytes and nothing else: a
// vertical tab or form feed before a document leaves it invalid JSON, as
// json.Valid says, rather than trimmed into a valid one.
func TestTrimSpace(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		" \t\r\n":           "",
		" \t{\"a\":1}\r\n ": `{"a":1}`,
		"1":                 "1",
		"\v{}\f":            "\v{}\f",
		" \v{} ":            "\v{}",
		"\"x \" \n":         `"x "`,
		" [1, 2 ]\t":        "[1, 2 ]",
		"\u00a0{}\u00a0":    "\u00a0{}\u00a0",
	} {
		if got := string(TrimSpace([]byte(in))); got != want {
			t.Errorf("TrimSpace(%q) = %q, want %q", in, got, want)
		}
	}
}
