// Package wire is the protocol of docs/interface.md. This file is the one
// to read beside it: the error catalogue (section 7), the actions (section
// 4), the request body (section 2.1) and every answer (sections 2.2 and
// 4). flat.go is only the fast path of DecodeRequest for the flat bodies
// every client sends (fuzzed against encoding/json); other bodies are
// walked by internal/jsonscan.
//
// The server (server/) answers with it and the Go client (client/) reads
// with it. It imports only the standard library, the root package and
// internal/jsonscan.
package wire

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/jsonscan"
)

// Code is the number of a failure answer, "Error(<number>) <text>". Each
// number stands for one condition. Never renumber one: clients match on them.
type Code int

// The error numbers.
const (
	MalformedRequest   Code = 100
	MethodNotAllowed   Code = 101
	UnknownPath        Code = 102
	CredentialsMissing Code = 110
	CredentialsFailed  Code = 111
	UnknownAction      Code = 120
	BadOrderID         Code = 130
	NoSuchOrder        Code = 131
	NotRenewed         Code = 132
	RateLimited        Code = 140
	Unavailable        Code = 150
	BadSerial          Code = 160
	NoSuchSerial       Code = 161
	BadThumbprint      Code = 162
	NoSuchThumbprint   Code = 163
	Internal           Code = 190
)

// The conditions a client tells apart, matched with errors.Is on the
// client's errors (client re-exports them).
var (
	ErrCredentialsRejected = errors.New("credentials rejected")
	ErrNoSuchOrder         = errors.New("no such order")
	ErrNotRenewed          = errors.New("order not renewed")
	ErrNoSuchCertificate   = errors.New("no such certificate")
	ErrRateLimited         = errors.New("rate limited")
	ErrUnavailable         = errors.New("service unavailable")
)

// entry is one row of the catalogue.
type entry struct {
	code     Code
	text     string // follows the number; the spec's style, nothing JSON must escape
	status   int    // HTTP status (unless the server answers all failures with 200)
	outcome  string // metric label value
	sentinel error  // what the client's errors.Is matches; nil: nothing to tell apart
}

// catalogue is every failure the service answers: the one table from which
// texts, statuses, metric names and the client's matching all come.
var catalogue = []entry{
	{MalformedRequest, "request is failed.", 400, "malformed_request", nil},                           // body not one JSON object (413 when over the size limit)
	{MethodNotAllowed, "method is failed.", 405, "method_not_allowed", nil},                           // not a POST
	{UnknownPath, "path is failed.", 404, "unknown_path", nil},                                        // no endpoint at this path
	{CredentialsMissing, "AccessName is failed.", 400, "credentials_missing", ErrCredentialsRejected}, // AccessName or AccessKey absent, empty or not a string
	{CredentialsFailed, "AccessName is failed.", 401, "credentials_rejected", ErrCredentialsRejected}, // unknown member, wrong or revoked key, disabled member: all alike
	{UnknownAction, "action is failed.", 400, "unknown_action", nil},                                  // action absent or not one of Actions
	{BadOrderID, "orderId is failed.", 400, "bad_order_id", nil},                                      // orderId absent or not a positive int64
	{NoSuchOrder, "orderId is failed.", 404, "no_such_order", ErrNoSuchOrder},                         // no such order for this member; another member's looks the same
	{NotRenewed, "orderId is failed.", 404, "not_renewed", ErrNotRenewed},                             // RenewCheck on an order not renewed
	{RateLimited, "rate limit is exceeded.", 429, "rate_limited", ErrRateLimited},                     // a limit refused the request; Retry-After says when to retry
	{Unavailable, "service is unavailable.", 503, "unavailable", ErrUnavailable},                      // store unreachable or server overloaded; retry
	{BadSerial, "serial_number is failed.", 400, "bad_serial_number", nil},                            // CertificateCheck: serial_number not a serial (or neither or both of serial_number and thumbprint given)
	{NoSuchSerial, "serial_number is failed.", 404, "no_such_serial_number", ErrNoSuchCertificate},    // no certificate of this member's orders has it; another member's looks the same
	{BadThumbprint, "thumbprint is failed.", 400, "bad_thumbprint", nil},                              // thumbprint not 40 hex digits
	{NoSuchThumbprint, "thumbprint is failed.", 404, "no_such_thumbprint", ErrNoSuchCertificate},      // no certificate of this member's orders has it; another member's looks the same
	{Internal, "internal error.", 500, "internal", nil},                                               // anything else
}

var byCode = func() map[Code]*entry {
	m := make(map[Code]*entry, len(catalogue))
	for i := range catalogue {
		m[catalogue[i].code] = &catalogue[i]
	}
	return m
}()

func (c Code) entry() *entry {
	if e := byCode[c]; e != nil {
		return e
	}
	return byCode[Internal]
}

// Known reports whether c is in the catalogue.
func (c Code) Known() bool { return byCode[c] != nil }

// Text is the text after the number; an unknown code reads as Internal's.
func (c Code) Text() string { return c.entry().text }

// Status is the HTTP status of the failure.
func (c Code) Status() int { return c.entry().status }

// Outcome is the metric label of the failure; 0 is "ok".
func (c Code) Outcome() string {
	if c == 0 {
		return "ok"
	}
	return c.entry().outcome
}

// Sentinel is the condition a client matches the failure with, or nil.
func (c Code) Sentinel() error {
	if e := byCode[c]; e != nil {
		return e.sentinel
	}
	return nil
}

// Codes lists the catalogue's numbers, in order.
func Codes() []Code {
	cs := make([]Code, len(catalogue))
	for i, e := range catalogue {
		cs[i] = e.code
	}
	return cs
}

// Failure is a failure answer: its number, its HTTP status (the
// catalogue's, but for a body over the limit, 413), and for refusals that
// pass, when to try again.
type Failure struct {
	Code       Code
	Status     int
	RetryAfter time.Duration
}

// Fail is the failure of code with its catalogue status.
func Fail(code Code) *Failure { return &Failure{Code: code, Status: code.Status()} }

// AppendFailure appends {"error_message":"Error(<number>) <text>"} and a newline.
func AppendFailure(b []byte, code Code) []byte {
	b = append(b, `{"error_message":"Error(`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ") "...)
	b = append(b, code.Text()...)
	return append(b, "\"}\n"...)
}

// Request is a decoded request body (section 2.1). Field names are matched
// exactly as the spec writes them; fields the spec does not know are ignored.
type Request struct {
	AccessName string
	AccessKey  string
	Action     string
	OrderID    []byte // raw JSON, read by ParseOrderID for the actions that need it
	// SerialNumber and Thumbprint are raw JSON, read by
	// ParseCertificateKey for CertificateCheck.
	SerialNumber, Thumbprint []byte
	CredsOK                  bool // AccessName and AccessKey are non-empty strings
	ActionOK                 bool // action is a string
}

// DecodeRequest reads a body: one JSON object, surrounded by nothing but
// JSON whitespace. A name that appears twice counts as its last.
func DecodeRequest(body []byte) (Request, *Failure) {
	var req Request
	var okName, okKey bool
	member := func(key, value []byte) {
		switch string(key) {
		case "AccessName":
			req.AccessName, okName = jsonString(value)
		case "AccessKey":
			req.AccessKey, okKey = jsonString(value)
		case "action":
			if name, ok := actionNames[string(value)]; ok {
				req.Action, req.ActionOK = name, true
			} else {
				req.Action, req.ActionOK = jsonString(value)
			}
		case "orderId":
			req.OrderID = value
		case "serial_number":
			req.SerialNumber = value
		case "thumbprint":
			req.Thumbprint = value
		}
	}
	// A flat body (flat.go), as every client sends, is checked and read in
	// one pass; any other is checked by json.Valid and read by jsonscan.
	if !flatMembers(body, member) {
		req, okName, okKey = Request{}, false, false
		body = jsonscan.TrimSpace(body)
		if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
			return Request{}, Fail(MalformedRequest)
		}
		jsonscan.EachMember(body, member)
	}
	req.CredsOK = okName && okKey && req.AccessName != "" && req.AccessKey != ""
	return req, nil
}

// actionNames maps each action's name, quoted as a request sends it, to
// the name: a known action is read without a copy of it.
var actionNames = func() map[string]string {
	m := make(map[string]string, len(Actions))
	for name := range Actions {
		m[strconv.Quote(name)] = name
	}
	return m
}()

// jsonString decodes a JSON string; anything else (null, a number) is not one.
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

// ParseOrderID reads orderId as the API accepts it: a JSON integer or a
// JSON string of ASCII digits, from 1 to the largest int64. Anything else
// (fractions, exponents, signs, spaces, escapes, booleans, null, objects)
// is refused: the string form is taken literally, so "\u0031" is not 1.
func ParseOrderID(raw []byte) (int64, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	return jsonscan.ParsePositive(raw)
}

// CertificateKey is the certificate a CertificateCheck asks about.
type CertificateKey struct {
	Thumbprint bool   // asked by thumbprint; else by serial_number
	Key        string // the look-up form (certorder.ParseSerial, ParseThumbprint); "" when the value is not one
}

// ParseCertificateKey reads CertificateCheck's parameters: serial_number
// or thumbprint, exactly one, a JSON string (certorder.ParseSerial,
// ParseThumbprint). Neither or both is a bad serial_number. A parameter
// that is null is not given, as a null AccessName is none (error 110) and
// a null orderId none (130): {"serial_number":null,"thumbprint":"…"}
// asks by thumbprint, and a null alone is neither.
func ParseCertificateKey(serial, thumbprint []byte) CertificateKey {
	if string(serial) == "null" {
		serial = nil
	}
	if string(thumbprint) == "null" {
		thumbprint = nil
	}
	switch {
	case serial != nil && thumbprint == nil:
		return CertificateKey{Key: parsed(serial, certorder.ParseSerial)}
	case thumbprint != nil && serial == nil:
		return CertificateKey{Thumbprint: true, Key: parsed(thumbprint, certorder.ParseThumbprint)}
	}
	return CertificateKey{}
}

// parsed is the look-up form parse gives the JSON string raw, "" when raw
// is not a string or parse refuses it.
func parsed(raw []byte, parse func(string) (string, bool)) string {
	s, ok := jsonString(raw)
	if !ok {
		return ""
	}
	key, ok := parse(s)
	if !ok {
		return ""
	}
	return key
}

// Action is one action of section 4. Answer returns the success body or the
// failure; ctx is the request's (the order comes with the credentials).
type Action struct {
	NeedsOrder bool // the request names an order in orderId, read with the credentials
	// NeedsCertificate: the request names a certificate (ParseCertificateKey),
	// read after the credentials are accepted, in the member's orders only.
	NeedsCertificate bool
	Answer           func(ctx context.Context, c *Call) ([]byte, *Failure)
}

// Call is an authenticated request, as an action sees it.
type Call struct {
	Credential certorder.Credential
	OrderID    int64            // 0 when orderId is absent or not a valid order number
	Order      *certorder.Order // the member's order OrderID names; nil if the member has none
	CertKey    CertificateKey
	// Certificate is the member's certificate CertKey names; nil if none.
	Certificate *certorder.CertificateMatch
	Now         time.Time
	Buf         []byte // room an answer may be built in (the server pools it); nil: none
}

// Actions are the actions of the interface, by name (case-sensitive), and
// CertificateCheck, an extension on the same endpoint and in the same form
// (the spec's section 1, item 5; docs/API.md). Adding one is an entry
// here with its Answer, its request fields in Request (and flat.go's
// decoding), its answer in docs/openapi.yaml and docs/API.md, and, when it
// reads something the credential's one read does not bring, a role of
// the store for the server to call.
var Actions = map[string]Action{
	"Auth":             {Answer: answerAuth},
	"OrderInfo":        {NeedsOrder: true, Answer: answerOrderInfo},
	"RenewCheck":       {NeedsOrder: true, Answer: answerRenewCheck},
	"CertificateCheck": {NeedsCertificate: true, Answer: answerCertificateCheck},
}

var authenticated = []byte(`{"message":"Authenticated"}` + "\n")

// answerAuth is section 4.1: {"message":"Authenticated"}.
func answerAuth(context.Context, *Call) ([]byte, *Failure) { return authenticated, nil }

// ownOrder is the order the call names. Another member's order is never
// read (the store's query asks for the member's own), so it gets the
// answer of one that does not exist.
func (c *Call) ownOrder() (*certorder.Order, *Failure) {
	switch {
	case c.OrderID == 0:
		return nil, Fail(BadOrderID)
	case c.Order == nil:
		return nil, Fail(NoSuchOrder)
	}
	return c.Order, nil
}

// answerOrderInfo is section 4.2: the order object of section 2.2.
func answerOrderInfo(_ context.Context, c *Call) ([]byte, *Failure) {
	o, f := c.ownOrder()
	if f != nil {
		return nil, f
	}
	b := c.Buf[:0]
	if cap(b) < len(o.Doc)+128 {
		b = make([]byte, 0, len(o.Doc)+128)
	}
	return append(AppendOrderInfo(b, o, c.Now), '\n'), nil
}

// answerRenewCheck is section 4.3: {"orderId":N,"renewed_orderId":M}.
func answerRenewCheck(_ context.Context, c *Call) ([]byte, *Failure) {
	o, f := c.ownOrder()
	if f != nil {
		return nil, f
	}
	if o.RenewedBy == 0 {
		return nil, Fail(NotRenewed)
	}
	b := append(c.Buf[:0], `{"orderId":`...)
	b = strconv.AppendInt(b, o.ID, 10)
	b = append(b, `,"renewed_orderId":`...)
	b = strconv.AppendInt(b, o.RenewedBy, 10)
	return append(b, "}\n"...), nil
}

// answerCertificateCheck is {"orderId":N,"certificate_id":M,"is_current":B}:
// the order the certificate belongs to (through its certificate history),
// its certificate ID (absent when the CA gave none), and whether it is the
// order's current certificate.
func answerCertificateCheck(_ context.Context, c *Call) ([]byte, *Failure) {
	bad, none := BadSerial, NoSuchSerial
	if c.CertKey.Thumbprint {
		bad, none = BadThumbprint, NoSuchThumbprint
	}
	switch {
	case c.CertKey.Key == "":
		return nil, Fail(bad)
	case c.Certificate == nil:
		return nil, Fail(none)
	}
	m := c.Certificate
	b := append(c.Buf[:0], `{"orderId":`...)
	b = strconv.AppendInt(b, m.OrderID, 10)
	if m.ID != 0 {
		b = append(b, `,"certificate_id":`...)
		b = strconv.AppendInt(b, m.ID, 10)
	}
	b = append(b, `,"is_current":`...)
	b = strconv.AppendBool(b, m.Current)
	return append(b, "}\n"...), nil
}

// AppendOrderInfo appends the order object of section 2.2: the stored
// document (see certorder.Order) with the derived fields spliced in as
// bytes, not re-encoded: certificate.days_remaining for now (UTC) at the
// end of the certificate object when it has a valid_till (an order not yet
// issued has none, and no days_remaining), and is_renewed (with
// was_renewed_by_order_id only when true) at the end of the order.
func AppendOrderInfo(b []byte, o *certorder.Order, now time.Time) []byte {
	doc, end := o.Doc, o.CertEnd
	if o.Certificate.ValidTill == "" {
		b = append(b, doc[:len(doc)-1]...)
	} else {
		b = append(b, doc[:end]...)
		if doc[end-1] != '{' {
			b = append(b, ',')
		}
		b = append(b, `"days_remaining":`...)
		b = strconv.AppendInt(b, int64(certorder.DaysRemaining(o.Certificate.ValidTill, now)), 10)
		b = append(b, doc[end:len(doc)-1]...)
	}
	if o.RenewedBy != 0 {
		b = append(b, `,"is_renewed":true,"was_renewed_by_order_id":`...)
		b = strconv.AppendInt(b, o.RenewedBy, 10)
	} else {
		b = append(b, `,"is_renewed":false`...)
	}
	return append(b, '}')
}
