package server

// The wire format, to be read beside shared/spec/interface.md: the request
// body (section 2.1), the answers (section 4) and the failure form (section 7).

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/certorder/certorder"
)

// request is a decoded request body. Field names are matched exactly as the
// spec writes them; fields the spec does not know are ignored.
type request struct {
	AccessName string
	AccessKey  string
	Action     string
	OrderID    []byte // raw JSON, checked by the actions that need it
	credsOK    bool   // AccessName and AccessKey are non-empty strings
	actionOK   bool   // action is a string
}

// decodeRequest reads the body: a JSON object of at most limit bytes.
func decodeRequest(w http.ResponseWriter, r *http.Request, limit int64) (request, *failure) {
	var req request
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return req, &failure{num: certorder.NumMalformedRequest, status: http.StatusRequestEntityTooLarge}
		}
		return req, fail(certorder.NumMalformedRequest)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
		return req, fail(certorder.NumMalformedRequest)
	}
	var okName, okKey bool
	eachMember(body, func(key, value []byte) {
		switch string(key) {
		case "AccessName":
			req.AccessName, okName = jsonString(value)
		case "AccessKey":
			req.AccessKey, okKey = jsonString(value)
		case "action":
			req.Action, req.actionOK = jsonString(value)
		case "orderId":
			req.OrderID = value
		}
	})
	req.credsOK = okName && okKey && req.AccessName != "" && req.AccessKey != ""
	return req, nil
}

// jsonString decodes a JSON string; anything else (absent, null, a number) is not one.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if plain(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// plain reports whether JSON string text needs no decoding: no escapes, and
// valid UTF-8 (encoding/json replaces invalid bytes with U+FFFD).
func plain(b []byte) bool {
	return bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b)
}

// eachMember calls fn with each member's name (unescaped) and raw value, in
// order, for a JSON object already checked with json.Valid. A name that
// appears twice is seen twice: the last one wins, as with encoding/json.
// It exists because decoding into a map costs a third of a request's time.
func eachMember(obj []byte, fn func(key, value []byte)) {
	i := skipSpace(obj, 1) // past '{'
	for i < len(obj) && obj[i] == '"' {
		end := stringEnd(obj, i)
		key := obj[i+1 : end-1]
		if !plain(key) {
			var k string
			json.Unmarshal(obj[i:end], &k) // valid JSON: cannot fail
			key = []byte(k)
		}
		i = skipSpace(obj, end)
		i = skipSpace(obj, i+1) // past ':'
		start := i
		i = valueEnd(obj, i)
		fn(key, bytes.TrimRight(obj[start:i], " \t\r\n"))
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
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

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(body)
}

// failureBody is {"error_message":"Error(<number>) <text>"}.
func failureBody(num certorder.ErrorNumber) []byte {
	b := append([]byte(nil), `{"error_message":"Error(`...)
	b = strconv.AppendInt(b, int64(num), 10)
	b = append(b, ") "...)
	b = append(b, num.Text()...) // the texts hold nothing that JSON must escape
	return append(b, "\"}\n"...)
}

var authenticatedBody = []byte(`{"message":"Authenticated"}` + "\n")

// renewCheckBody is {"orderId": N, "renewed_orderId": M}.
func renewCheckBody(oldID, newID int64) []byte {
	b := append([]byte(nil), `{"orderId":`...)
	b = strconv.AppendInt(b, oldID, 10)
	b = append(b, `,"renewed_orderId":`...)
	b = strconv.AppendInt(b, newID, 10)
	return append(b, "}\n"...)
}
