package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/certorder/certorder/wire"
)

// The conditions a failure answer can stand for; test with errors.Is.
var (
	ErrCredentialsRejected = wire.ErrCredentialsRejected
	ErrNoSuchOrder         = wire.ErrNoSuchOrder
	ErrNotRenewed          = wire.ErrNotRenewed
	ErrNoSuchCertificate   = wire.ErrNoSuchCertificate
	ErrRateLimited         = wire.ErrRateLimited
	ErrUnavailable         = wire.ErrUnavailable
)

// ErrOrderEnded is Current's answer when the newest order of a chain is
// canceled or rejected: it will never have a certificate, and automation
// must not use it. The error is an *EndedError.
var ErrOrderEnded = errors.New("client: the newest order of the renewal chain is canceled or rejected")

// ErrBadChain is Current's answer when the service's renewal chain cannot
// be followed: it loops, is longer than WithMaxChain, or an answer names
// another order than the one asked for. Asking again will not help.
var ErrBadChain = errors.New("client: the renewal chain cannot be followed")

// EndedError says where a chain ended in a canceled or rejected order.
type EndedError struct {
	Chain []int64 // from the order asked about to the ended one
	Order *Order  // the ended order
}

func (e *EndedError) Error() string {
	if len(e.Chain) > 1 {
		return fmt.Sprintf("client: order %d was renewed by order %d, which is %s", e.Chain[len(e.Chain)-2], e.Order.OrderID, e.Order.Status)
	}
	return fmt.Sprintf("client: order %d is %s", e.Order.OrderID, e.Order.Status)
}

// Is matches ErrOrderEnded.
func (e *EndedError) Is(target error) bool { return target == ErrOrderEnded }

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

// Is matches the condition the answer stands for. certorder's numbers
// (package wire) say it exactly; another service that follows the spec
// uses its own numbers, and its answers are read by their text and status.
func (e *APIError) Is(target error) bool {
	if code := wire.Code(e.Number); code.Known() {
		return code.Sentinel() == target && target != nil
	}
	switch target {
	case ErrCredentialsRejected:
		return strings.HasPrefix(e.Text, "AccessName") || e.Status == 401
	case ErrNoSuchOrder:
		return strings.HasPrefix(e.Text, "orderId")
	case ErrNoSuchCertificate:
		return strings.HasPrefix(e.Text, "serial_number") || strings.HasPrefix(e.Text, "thumbprint")
	case ErrRateLimited:
		return e.Status == 429
	case ErrUnavailable:
		return e.Status == 503
	}
	return false
}

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
