package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// UserAgent is sent with every delivery.
const UserAgent = "certorder-webhook/1"

// MaxAnswer is how much of an answer's body Deliver keeps; the rest is
// never read, and the connection is closed.
const MaxAnswer = 1024

// Class is the outcome of one attempt, in words fit to store and show.
type Class string

// The outcomes of an attempt. Only ClassDelivered is a success; ClassGone
// asks for the endpoint to be disabled; ClassInvalid will never succeed as
// called; ClassCanceled means the caller's context ended (serve stopping),
// so the attempt should not count; every other class is retried later.
const (
	ClassDelivered Class = "delivered"   // 2xx
	ClassGone      Class = "gone"        // 410 Gone
	ClassStatus    Class = "http_status" // any other status, redirects included
	ClassTimeout   Class = "timeout"     // no answer (status line) in time
	ClassRefused   Class = "refused"     // connection refused
	ClassTLS       Class = "tls"         // handshake or certificate failure
	ClassBlocked   Class = "blocked"     // refused by the address rule (ErrBlocked)
	ClassDNS       Class = "dns"         // the name does not resolve
	ClassNetwork   Class = "network"     // any other connection failure
	ClassCanceled  Class = "canceled"    // the caller's context was canceled
	ClassInvalid   Class = "invalid"     // bad URL, message ID or keys: fix the caller
)

// Result is what one attempt gave.
type Result struct {
	Class   Class
	Status  int           // HTTP status; 0 when no answer came
	Latency time.Duration // from sending to the end of what was read of the answer
	// Answer is the start of the answer's body (at most MaxAnswer bytes),
	// made valid UTF-8, for the member to see why a delivery failed.
	Answer string
	// RetryAfter is the answer's Retry-After (429, 503, ...), capped at
	// 24 h; zero when absent. The next attempt should not come sooner.
	RetryAfter time.Duration
	// Err says what went wrong, nil when delivered. It names the host,
	// never the whole URL, nor any secret.
	Err error
}

// Delivered reports a 2xx answer: the message is done.
func (r Result) Delivered() bool { return r.Class == ClassDelivered }

// Gone reports 410 Gone: the receiver wants no more; disable the endpoint.
func (r Result) Gone() bool { return r.Class == ClassGone }

// Retry reports whether the message should be tried again later (per Backoff).
func (r Result) Retry() bool {
	switch r.Class {
	case ClassDelivered, ClassGone, ClassInvalid:
		return false
	}
	return true
}

// maxRetryAfter caps a receiver's Retry-After; the schedule's longest wait.
const maxRetryAfter = 24 * time.Hour

// Deliver makes one attempt to POST body to endpointURL, signed with keys
// (Sign), with the Standard Webhooks headers: webhook-id msgID (the same on
// every retry), webhook-timestamp ts (this attempt's time, unix seconds),
// webhook-signature. Use a client from NewHTTPClient: it holds the address
// rule, the timeout and the no-redirect policy.
func Deliver(ctx context.Context, client *http.Client, endpointURL string, keys [][]byte, msgID string, ts time.Time, body []byte) Result {
	host := "the endpoint"
	u, err := url.Parse(endpointURL)
	if err != nil {
		return Result{Class: ClassInvalid, Err: fmt.Errorf("%w: it does not parse", ErrInvalidURL)}
	}
	if u.Hostname() != "" {
		host = u.Hostname()
	}
	if !ValidMessageID(msgID) {
		return Result{Class: ClassInvalid, Err: errors.New("webhook: message ID must be 1 to 128 of [A-Za-z0-9_-]")}
	}
	if client == nil {
		return Result{Class: ClassInvalid, Err: errors.New("webhook: no HTTP client")}
	}
	if len(keys) == 0 {
		return Result{Class: ClassInvalid, Err: errors.New("webhook: no signing key; an unsigned webhook is never sent")}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpointURL, bytes.NewReader(body))
	if err != nil {
		return Result{Class: ClassInvalid, Err: fmt.Errorf("webhook: request to %s: %w", host, unwrapURLError(err))}
	}
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(keys, msgID, ts, body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)

	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return Result{Class: classify(ctx, err), Latency: time.Since(start), Err: fmt.Errorf("webhook: POST to %s: %w", host, unwrapURLError(err))}
	}
	answer, readErr := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	// Closing before the end drops the connection instead of reading on.
	resp.Body.Close()
	res := Result{
		Status:  resp.StatusCode,
		Latency: time.Since(start),
		Answer:  strings.ToValidUTF8(string(answer), string(utf8.RuneError)),
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		// The receiver said yes; a body it then failed to send does not undo that.
		res.Class = ClassDelivered
		return res
	case code == http.StatusGone:
		res.Class = ClassGone
	case code >= 300 && code <= 399:
		res.Class = ClassStatus
		res.Err = fmt.Errorf("webhook: %s answered %d, a redirect, which is not followed: update the endpoint URL", host, code)
	default:
		res.Class = ClassStatus
		res.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	if res.Err == nil {
		res.Err = fmt.Errorf("webhook: %s answered %d", host, resp.StatusCode)
	}
	if readErr != nil && classify(ctx, readErr) == ClassTimeout {
		res.Err = fmt.Errorf("%w, then timed out sending its body", res.Err)
	}
	return res
}

// classify names the class of a failed request.
func classify(ctx context.Context, err error) Class {
	var (
		dnsErr      *net.DNSError
		certErr     *tls.CertificateVerificationError
		recordErr   tls.RecordHeaderError
		alertErr    tls.AlertError
		unknownErr  x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		invalidErr  x509.CertificateInvalidError
		netErr      net.Error
	)
	switch {
	case errors.Is(err, ErrBlocked):
		return ClassBlocked
	case errors.Is(ctx.Err(), context.Canceled):
		return ClassCanceled
	case errors.As(err, &certErr), errors.As(err, &recordErr), errors.As(err, &alertErr),
		errors.As(err, &unknownErr), errors.As(err, &hostnameErr), errors.As(err, &invalidErr):
		return ClassTLS
	case errors.As(err, &dnsErr) && !dnsErr.IsTimeout:
		return ClassDNS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ClassTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassRefused
	case errors.Is(err, ErrInvalidURL):
		return ClassInvalid
	case strings.Contains(err.Error(), "tls: "):
		// Some handshake failures are plain errors whose only mark is their text.
		return ClassTLS
	}
	return ClassNetwork
}

// unwrapURLError drops net/http's *url.Error wrapper, whose text quotes the
// whole URL, keeping what it wraps.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// retryAfter reads a Retry-After value, seconds or an HTTP date, capped.
func retryAfter(h string, now time.Time) time.Duration {
	var d time.Duration
	if secs, err := strconv.ParseInt(strings.TrimSpace(h), 10, 64); err == nil {
		d = time.Duration(min(max(secs, 0), int64(maxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
