package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The conditions a failure answer can stand for; test with errors.Is.
var (
	ErrCredentialsRejected = errors.New("credentials rejected")
	ErrNoSuchOrder         = errors.New("no such order")
	ErrNotRenewed          = errors.New("order not renewed")
	ErrRateLimited         = errors.New("rate limited")
	ErrUnavailable         = errors.New("service unavailable")
)

// certorder's error numbers (docs/API.md). Another service that follows the
// spec uses its own numbers; its answers are then read by their text.
const (
	numCredentialsMissing = 110
	numCredentialsFailed  = 111
	numNoSuchOrder        = 131
	numNotRenewed         = 132
	numRateLimited        = 140
	numUnavailable        = 150
)

// APIError is a failure answer of the service: {"error_message": "Error(<number>) <text>"}.
type APIError struct {
	Number  int    // the number; 0 if the message had none
	Text    string // the text after the number
	Message string // error_message as sent
	Status  int    // the HTTP status it came with
	// RetryAfter is how long the service asked the caller to wait (its
	// Retry-After header, on a 429 or 5xx answer); 0 when it did not say.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("the service said %q (HTTP %d)", e.Message, e.Status)
}

// Is matches the condition the answer stands for.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrCredentialsRejected:
		return e.Number == numCredentialsFailed || e.Number == numCredentialsMissing ||
			!e.known() && strings.HasPrefix(e.Text, "AccessName") || e.Status == 401
	case ErrNoSuchOrder:
		return e.Number == numNoSuchOrder || !e.known() && strings.HasPrefix(e.Text, "orderId")
	case ErrNotRenewed:
		return e.Number == numNotRenewed
	case ErrRateLimited:
		return e.Number == numRateLimited || e.Status == 429
	case ErrUnavailable:
		return e.Number == numUnavailable || e.Status == 503
	}
	return false
}

// known reports whether the number is one of certorder's, whose meaning is exact.
func (e *APIError) known() bool { return e.Number >= 100 && e.Number < 200 }

func (e *APIError) temporary() bool {
	return errors.Is(e, ErrRateLimited) || errors.Is(e, ErrUnavailable)
}

var messagePattern = regexp.MustCompile(`^Error\((-?\d+)\)\s*(.*)$`)

func parseAPIError(raw json.RawMessage, status int) *APIError {
	var msg string
	if json.Unmarshal(raw, &msg) != nil {
		msg = string(raw)
	}
	e := &APIError{Message: msg, Text: msg, Status: status}
	if m := messagePattern.FindStringSubmatch(msg); m != nil {
		e.Number, _ = strconv.Atoi(m[1])
		e.Text = m[2]
	}
	return e
}

// HTTPError is an answer that is not the service's JSON: an HTML error page
// from a proxy, a truncated or garbled body, or an unexpected status.
type HTTPError struct {
	Status int
	Body   string // the start of the body
	Err    error
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("HTTP %d: %v: %q", e.Status, e.Err, e.Body)
}

func (e *HTTPError) Unwrap() error { return e.Err }
