package digicert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/time/rate"
)

// DefaultURL is the base URL of CertCentral US's Services API v2, as the
// "Services API" page gives it (there without the trailing slash).
const DefaultURL = "https://www.digicert.com/services/v2/"

// EuropeURL is the base URL of CertCentral Europe's Services API v2.
const EuropeURL = "https://certcentral.digicert.eu/services/v2/"

// Bounds on what a Client reads, so that a broken or hostile CertCentral
// cannot grow a sync's memory without end, nor keep it paging forever
// (holding the sync lock). Hitting one ends the call with an error that
// matches ErrTooLarge; a sync then fails and keeps its cursor.
const (
	// MaxAnswerBytes bounds one answer: a List orders page of 1000 orders
	// is about 1 MB.
	MaxAnswerBytes = 8 << 20
	// maxErrorBytes bounds what is read of an answer other than 200.
	maxErrorBytes = 64 << 10
	// MaxListPages bounds the pages one OrderPages walk reads: a million
	// orders at 1000 a page.
	MaxListPages = 1000
	// MaxStatusChanges bounds the entries one StatusChangesSince (or
	// StatusChanges) call reads, 100 pages of 1000.
	MaxStatusChanges = 100_000
)

// ErrTooLarge is matched (errors.Is) by the errors of a call that hit one
// of the bounds above.
var ErrTooLarge = errors.New("digicert: CertCentral's answer is over a bound")

// Client calls the CertCentral Services API with one API key. It is safe for
// concurrent use; all its calls share one rate limiter.
type Client struct {
	base *url.URL
	// key is held in a closure so that printing the Client, even with %#v,
	// cannot show it.
	key        func() string
	hc         *http.Client
	limits     []Limit
	limiters   []*rate.Limiter
	attempts   int
	backoff    time.Duration
	maxBackoff time.Duration
	skew       time.Duration
	maxPages   int
	maxChanges int
	now        func() time.Time
	sleep      func(ctx context.Context, d time.Duration) error

	mu    sync.Mutex
	stats Stats
}

// Stats counts what a Client has done since it was made.
type Stats struct {
	Requests int64         // HTTP requests sent, retries included
	ByStatus map[int]int64 // requests by HTTP status; 0 counts requests that got no answer
	Retries  int64         // requests repeated after a 429, a 5xx or a network error
	// LimiterWaits counts requests that waited on the client-side rate
	// limiter, LimiterWait the time they spent waiting.
	LimiterWaits int64
	LimiterWait  time.Duration
	BackoffWait  time.Duration // time spent backing off before retries
}

// Option changes a Client's defaults.
type Option func(*Client) error

// WithLimits replaces the per-key limits the client keeps inside (default
// DocumentedLimits). With no limit at all the client does not limit itself.
func WithLimits(limits ...Limit) Option {
	return func(c *Client) error {
		c.limits = append([]Limit(nil), limits...)
		return nil
	}
}

// WithClock replaces the clock the limiter, the backoff and the status
// change windows use: now reads the time, sleep waits (and must return
// ctx.Err() when ctx ends first). Tests pass a fake clock so that nothing
// sleeps for real.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) error {
		if now == nil || sleep == nil {
			return errors.New("digicert: WithClock: now and sleep are both required")
		}
		c.now, c.sleep = now, sleep
		return nil
	}
}

// New returns a client of the Services API at baseURL (DefaultURL for
// DigiCert's US instance) that authenticates with apiKey.
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("digicert: base URL %q is not an http(s) URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("digicert: base URL %q must not have a query or fragment", baseURL)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if apiKey == "" {
		return nil, errors.New("digicert: the API key is empty")
	}
	if strings.ContainsAny(apiKey, "\r\n\x00") || strings.TrimSpace(apiKey) != apiKey {
		return nil, errors.New("digicert: the API key has characters an HTTP header cannot carry (line breaks, or spaces at its ends)")
	}
	c := &Client{
		base:       u,
		key:        func() string { return apiKey },
		hc:         &http.Client{Timeout: 60 * time.Second},
		limits:     DocumentedLimits(),
		attempts:   8,
		backoff:    time.Second,
		maxBackoff: time.Minute,
		skew:       2 * time.Minute,
		maxPages:   MaxListPages,
		maxChanges: MaxStatusChanges,
		now:        time.Now,
		sleep:      sleepContext,
		stats:      Stats{ByStatus: map[int]int64{}},
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	hc := *c.hc // a copy: the caller's client keeps its own redirect policy
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	for _, l := range c.limits {
		lim, err := bucketFor(l)
		if err != nil {
			return nil, err
		}
		c.limiters = append(c.limiters, lim)
	}
	return c, nil
}

// String names the client's base URL; never the key.
func (c *Client) String() string {
	return fmt.Sprintf("digicert.Client(%s, API key redacted)", c.base)
}

// GoString is String, so that %#v does not print the fields.
func (c *Client) GoString() string { return c.String() }

// BaseURL is the base URL the client calls, ending in a slash.
func (c *Client) BaseURL() string { return c.base.String() }

// Limits are the per-key limits the client keeps inside.
func (c *Client) Limits() []Limit { return append([]Limit(nil), c.limits...) }

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.ByStatus = maps.Clone(c.stats.ByStatus)
	return s
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// get calls GET base+path?query and decodes a 200 answer into out.
func (c *Client) get(ctx context.Context, op, path string, query url.Values, out any) error {
	return c.call(ctx, http.MethodGet, op, path, query, nil, out)
}

// call sends method base+path?query with body (JSON, nil for none) and
// decodes a 2xx answer into out (nil: the answer is not read). It waits
// on the limiter before every request and retries 429, 5xx and network
// errors with backoff; other answers end the call at once.
func (c *Client) call(ctx context.Context, method, op, path string, query url.Values, body, out any) error {
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("digicert: %s: %w", op, err)
		}
	}
	for attempt := 1; ; attempt++ {
		waited, err := c.wait(ctx)
		if err != nil {
			return fmt.Errorf("digicert: %s: %w", op, err)
		}
		status, answer, err := c.once(ctx, method, u, payload)
		c.record(status, waited)
		var final error
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("digicert: %s: %w", op, ctx.Err())
		case errors.Is(err, ErrTooLarge):
			return fmt.Errorf("digicert: %s: %w", op, err) // asking again would read as much
		case err != nil && unreachable(err) != "":
			// The DNS answered that the name does not exist, or nothing
			// listens at the address: retrying for minutes would not
			// change that, and it is most likely a wrong base URL.
			return fmt.Errorf("digicert: %s: %w", op, &UnreachableError{URL: c.base.Redacted(), Reason: unreachable(err), Err: err})
		case err != nil:
			final = fmt.Errorf("digicert: %s: %w", op, err)
		case status >= 200 && status < 300:
			if out == nil {
				return nil
			}
			if err := json.Unmarshal(answer, out); err != nil {
				return fmt.Errorf("digicert: %s: the answer is not the JSON documented: %w", op, err)
			}
			return nil
		default:
			apiErr := newAPIError(op, status, answer, c.key())
			apiErr.Attempts = attempt
			if status != http.StatusTooManyRequests && status < 500 {
				return apiErr
			}
			final = apiErr
		}
		if attempt >= c.attempts {
			var apiErr *APIError
			if errors.As(final, &apiErr) {
				return apiErr
			}
			return fmt.Errorf("%w (after %d attempts)", final, attempt)
		}
		d := c.backoffFor(attempt)
		c.mu.Lock()
		c.stats.Retries++
		c.stats.BackoffWait += d
		c.mu.Unlock()
		if err := c.sleep(ctx, d); err != nil {
			return fmt.Errorf("digicert: %s: backing off after %v: %w", op, final, err)
		}
	}
}

// backoffFor is the wait before retry number attempt: base doubled per
// retry, capped, with "equal jitter" (half fixed, half random) so that
// several clients do not retry in step. DigiCert sends no Retry-After.
func (c *Client) backoffFor(attempt int) time.Duration {
	d := c.backoff
	for i := 1; i < attempt && d < c.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.maxBackoff)
	half := d / 2
	return half + rand.N(d-half+1)
}

// once makes one request. A network error returns status 0.
func (c *Client) once(ctx context.Context, method string, u *url.URL, payload []byte) (int, []byte, error) {
	if reservedInvalid(u.Hostname()) {
		// RFC 6761 (section 6.4): a name under .invalid never resolves, and
		// resolvers are to say so at once; no query leaves the machine.
		return 0, nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{
			Err: "no such host (RFC 6761: .invalid never resolves)", Name: u.Hostname(), IsNotFound: true}}
	}
	var reqBody io.Reader
	if payload != nil {
		reqBody = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reqBody)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-DC-DEVKEY", c.key())
	req.Header.Set("Accept", "application/json") // List orders answers CSV to Accept: text/csv
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "certorder-digicert/1")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		// Only an excerpt of an error is kept: read no more than that needs.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
		return resp.StatusCode, body, nil
	}
	if resp.ContentLength > MaxAnswerBytes {
		return 0, nil, fmt.Errorf("%w: the answer declares %d bytes, over %d", ErrTooLarge, resp.ContentLength, MaxAnswerBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if len(body) > MaxAnswerBytes {
		return 0, nil, fmt.Errorf("%w: the answer is over %d bytes", ErrTooLarge, MaxAnswerBytes)
	}
	return resp.StatusCode, body, nil
}

func (c *Client) record(status int, waited time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Requests++
	c.stats.ByStatus[status]++
	if waited > 0 {
		c.stats.LimiterWaits++
		c.stats.LimiterWait += waited
	}
}

// itoa formats an order ID for a path or a query.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// unreachable says why a request's network error means the address
// cannot be reached however often it is asked again: the DNS's definite
// answer that the name does not exist, or a refused connection (nothing
// listens there). "" for the errors that may pass and are retried: a
// timeout, a DNS server failure, a connection reset or cut short.
func unreachable(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound && !dnsErr.IsTimeout && !dnsErr.IsTemporary {
		return fmt.Sprintf("the host %s does not resolve", dnsErr.Name)
	}
	var opErr *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) && errors.As(err, &opErr) && opErr.Op == "dial" {
		addr := "the address"
		if opErr.Addr != nil {
			addr = opErr.Addr.String()
		}
		return fmt.Sprintf("connection refused: nothing listens at %s", addr)
	}
	return ""
}

// reservedInvalid reports whether host is under .invalid, which RFC 6761
// (section 6.4) reserves for names that never resolve.
func reservedInvalid(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "invalid" || strings.HasSuffix(h, ".invalid")
}
