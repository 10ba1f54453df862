package digicert

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/certorder/certorder/internal/printable"
)

// Errors an *APIError matches with errors.Is.
var (
	// ErrUnauthorized: DigiCert refused the API key (HTTP 401 or 403).
	ErrUnauthorized = errors.New("digicert: the API key was refused")
	// ErrNotFound: no such order or route (HTTP 404).
	ErrNotFound = errors.New("digicert: not found")
	// ErrRateLimited: DigiCert's rate limit was hit (HTTP 429), after the
	// retries ran out.
	ErrRateLimited = errors.New("digicert: rate limit exceeded")
	// ErrUnavailable: DigiCert answered 5xx, after the retries ran out.
	ErrUnavailable = errors.New("digicert: service unavailable")
)

// ErrUnreachable is matched (errors.Is) by an *UnreachableError.
var ErrUnreachable = errors.New("digicert: CertCentral cannot be reached")

// UnreachableError is a call that reached no server, for a reason asking
// again would not change: the base URL's host does not resolve, or nothing
// listens at its address. It is not retried: the URL is most likely wrong.
type UnreachableError struct {
	URL    string // the client's base URL, a password in it redacted
	Reason string // "the host cc.example.invalid does not resolve", "connection refused: nothing listens at 127.0.0.1:1"
	Err    error  // the network error
}

func (e *UnreachableError) Error() string {
	return "CertCentral at " + e.URL + " cannot be reached: " + e.Reason
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Is matches ErrUnreachable.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// APIError is an answer other than 200 from the Services API. Codes and
// Messages come from its documented body, {"errors":[{"code":...,
// "message":...}]}, with the API key removed should DigiCert ever echo it.
type APIError struct {
	Op       string // what was asked, e.g. "order info 123"
	Status   int    // HTTP status
	Codes    []string
	Messages []string
	Attempts int // requests made for this call, retries included
}

// Error says what failed without the API key.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digicert: %s: ", e.Op)
	switch {
	case e.Status == 401 || e.Status == 403:
		fmt.Fprintf(&b, "DigiCert refused the API key (HTTP %d)", e.Status)
	case e.Status == 429:
		fmt.Fprintf(&b, "rate limit exceeded (HTTP 429)")
	default:
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	}
	for i, code := range e.Codes {
		msg := ""
		if i < len(e.Messages) {
			msg = e.Messages[i]
		}
		sep := ": "
		if i > 0 {
			sep = "; "
		}
		b.WriteString(sep + code)
		if msg != "" {
			b.WriteString(" " + msg)
		}
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Is matches ErrUnauthorized, ErrNotFound, ErrRateLimited and ErrUnavailable.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.Status == 401 || e.Status == 403
	case ErrNotFound:
		return e.Status == 404
	case ErrRateLimited:
		return e.Status == 429
	case ErrUnavailable:
		return e.Status >= 500
	}
	return false
}

// maxMessage bounds what an error keeps of each code and message (and of
// a body that is not the documented error shape); maxItems how many of
// them it keeps. So an error, stored in the sync-run record and printed,
// stays under about 2 KB whatever DigiCert sends.
const (
	maxMessage = 200
	maxItems   = 5
)

// excerpt makes text from the server fit to store and print: the key
// removed (before cutting, so no part of it survives the cut), then
// certorder's one rule for shown text (internal/printable): escaped, at
// most maxMessage bytes, "..." marking a cut.
func excerpt(text, key string) string {
	return printable.Cut(strings.TrimSpace(redact(text, key)), maxMessage)
}

// newAPIError reads DigiCert's error body. The documented shape is an array
// of {code, message}; a single object in place of the array is accepted too,
// as some older answers have it.
func newAPIError(op string, status int, body []byte, key string) *APIError {
	e := &APIError{Op: op, Status: status}
	var doc struct {
		Errors json.RawMessage `json:"errors"`
	}
	type item struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	var items []item
	if json.Unmarshal(body, &doc) == nil && len(doc.Errors) > 0 {
		if json.Unmarshal(doc.Errors, &items) != nil {
			var one item
			if json.Unmarshal(doc.Errors, &one) == nil {
				items = []item{one}
			}
		}
	}
	for i, it := range items {
		if i == maxItems {
			e.Codes = append(e.Codes, "...")
			e.Messages = append(e.Messages, fmt.Sprintf("%d more", len(items)-maxItems))
			break
		}
		e.Codes = append(e.Codes, excerpt(it.Code, key))
		e.Messages = append(e.Messages, excerpt(it.Message, key))
	}
	if len(items) == 0 && len(body) > 0 {
		e.Codes = []string{"unexpected_body"}
		e.Messages = []string{excerpt(string(body), key)}
	}
	return e
}

// redact removes the key from text that came from the server.
func redact(text, key string) string {
	if key == "" {
		return text
	}
	return strings.ReplaceAll(text, key, "[redacted]")
}
