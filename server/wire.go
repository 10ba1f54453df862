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

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/jsonscan"
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
	jsonscan.EachMember(body, func(key, value []byte) {
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
	if jsonscan.Plain(raw[1 : len(raw)-1]) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
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

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
