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
)

// request is a decoded request body. Field names are matched exactly as the
// spec writes them; fields the spec does not know are ignored.
type request struct {
	AccessName string
	AccessKey  string
	Action     string
	OrderID    json.RawMessage // checked by the actions that need it
	credsOK    bool            // AccessName and AccessKey are non-empty strings
	actionOK   bool            // action is a string
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
	var fields map[string]json.RawMessage
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &fields) != nil {
		return req, fail(certorder.NumMalformedRequest)
	}
	name, okName := jsonString(fields["AccessName"])
	key, okKey := jsonString(fields["AccessKey"])
	req.AccessName, req.AccessKey = name, key
	req.credsOK = okName && okKey && name != "" && key != ""
	req.Action, req.actionOK = jsonString(fields["action"])
	req.OrderID = fields["orderId"]
	return req, nil
}

// jsonString decodes a JSON string; anything else (absent, null, a number) is not one.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
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
