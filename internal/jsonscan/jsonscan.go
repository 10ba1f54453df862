// Package jsonscan walks the members of a JSON object that json.Valid has
// accepted, without decoding it, and reads the IDs they hold: the hot paths
// of requests and imports.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Plain reports whether JSON string text needs no decoding: no escapes, and
// valid UTF-8 (encoding/json replaces invalid bytes with U+FFFD).
func Plain(b []byte) bool {
	return bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b)
}

// EachMember calls fn with each member's name (unescaped) and raw value, in
// order, for a JSON object already checked with json.Valid. A name that
// appears twice is seen twice: the last one wins, as with encoding/json.
// It exists because decoding into a map cost a third of a request's time.
func EachMember(obj []byte, fn func(key, value []byte)) {
	i := SkipSpace(obj, 1) // past '{'
	for i < len(obj) && obj[i] == '"' {
		end := stringEnd(obj, i)
		key := obj[i+1 : end-1]
		if !Plain(key) {
			var k string
			json.Unmarshal(obj[i:end], &k) // valid JSON: cannot fail
			key = []byte(k)
		}
		i = SkipSpace(obj, end)
		i = SkipSpace(obj, i+1) // past ':'
		start := i
		i = valueEnd(obj, i)
		fn(key, TrimSpace(obj[start:i]))
		i = SkipSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
}

// TrimSpace is b without JSON's whitespace (space, tab, CR, LF) at either
// end. bytes.Trim with that cutset builds its set of bytes on every call:
// 4% of BenchmarkParse's time (orderdoc), which trims each member it reads.
func TrimSpace(b []byte) []byte {
	i, end := SkipSpace(b, 0), len(b)
	for end > i && isSpace(b[end-1]) {
		end--
	}
	return b[i:end]
}

// SkipSpace returns the index of the first byte at or after b[i] that is
// not JSON's whitespace (len(b) if none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// stringEnd returns the index just past the string that starts at b[i]:
// past the first quote after it with an even run of backslashes before it
// (none escaped). It looks for quotes with bytes.IndexByte rather than at
// every byte: a CSR's 300 bytes are a fifth of a loadbench order.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			break
		}
		q += i
		n := 0 // backslashes just before the quote
		for n < q-i && b[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
	return len(b)
}

// valueEnd returns the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	if b[i] == '"' {
		return stringEnd(b, i)
	}
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// ParsePositive parses text made only of ASCII digits into an int64 > 0:
// an ID sent as a JSON number or as a string of digits.
func ParsePositive(text []byte) (int64, bool) {
	if len(text) == 0 || len(text) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, n > 0
}
