// Package client is the Go client of the certificate-order lookup service
// (docs/interface.md). It copes with what the spec allows: numbers
// sent as strings, optional fields, dates in two forms, and a failure inside
// an HTTP 200. It retries what is worth retrying and nothing else.
//
//	c, err := client.New("https://host/api/digicert/", "acme-corp", key)
//	cur, err := c.Current(ctx, 10001) // follows renewals to the newest order
//	fmt.Println(cur.Order.OrderID, cur.Order.Certificate.ValidTill)
//
// It imports the standard library, the root package (OrderEnded, the one
// rule of which statuses end an order) and wire/ (the error codes).
// Neither pulls in a store, a driver or a dependency outside the module.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Client calls one endpoint with one member's credentials. It is safe for
// concurrent use.
type Client struct {
	endpoint   string
	name, key  string
	httpClient *http.Client
	timeout    time.Duration
	attempts   int
	backoff    time.Duration // first retry's wait; doubled each time, with jitter
	maxBackoff time.Duration
	maxChain   int
	sleep      func(ctx context.Context, d time.Duration) error
}

// Option changes a Client's defaults.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (for a proxy, TLS settings, a transport).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.httpClient = hc } }

// WithTimeout bounds a whole call, retries included, when the context has
// no earlier deadline. Default 30s; 0 means only the context bounds it.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithRetries sets how many times a call is retried after the first try. Default 3.
func WithRetries(n int) Option { return func(c *Client) { c.attempts = max(n, 0) + 1 } }

// WithBackoff sets the wait before the first retry and the cap on any wait;
// a Retry-After longer than the cap ends the call with the answer at once.
// Default 250ms and 10s.
func WithBackoff(first, limit time.Duration) Option {
	return func(c *Client) { c.backoff, c.maxBackoff = first, limit }
}

// WithMaxChain bounds how many renewals Current follows. Default 100.
func WithMaxChain(n int) Option { return func(c *Client) { c.maxChain = n } }

// New returns a client for endpointURL, the full address the reseller
// gives members (for example https://host/api/digicert/).
func New(endpointURL, accessName, accessKey string, opts ...Option) (*Client, error) {
	u, err := url.Parse(endpointURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: endpoint %q is not an http(s) URL", endpointURL)
	}
	if accessName == "" || accessKey == "" {
		return nil, errors.New("client: access name and access key are required")
	}
	c := &Client{
		endpoint: endpointURL, name: accessName, key: accessKey,
		httpClient: http.DefaultClient,
		timeout:    30 * time.Second,
		attempts:   4,
		backoff:    250 * time.Millisecond,
		maxBackoff: 10 * time.Second,
		maxChain:   100,
		sleep:      sleepCtx,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Auth checks the credentials. It returns nil when they are accepted.
func (c *Client) Auth(ctx context.Context) error {
	_, err := c.Call(ctx, "Auth", 0)
	return err
}

// OrderInfo returns one order.
func (c *Client) OrderInfo(ctx context.Context, orderID int64) (*Order, error) {
	raw, err := c.Call(ctx, "OrderInfo", orderID)
	if err != nil {
		return nil, err
	}
	o := &Order{Raw: raw}
	if err := json.Unmarshal(raw, o); err != nil {
		return nil, &HTTPError{Status: http.StatusOK, Body: snippet(raw), Err: err}
	}
	return o, nil
}

// RenewCheck returns the order that renewed orderID. An order not renewed
// gives an error that matches ErrNotRenewed.
func (c *Client) RenewCheck(ctx context.Context, orderID int64) (*Renewal, error) {
	raw, err := c.Call(ctx, "RenewCheck", orderID)
	if err != nil {
		return nil, err
	}
	r := &Renewal{Raw: raw}
	if err := json.Unmarshal(raw, r); err != nil || !r.RenewedOrderID.Valid {
		return nil, &HTTPError{Status: http.StatusOK, Body: snippet(raw), Err: errors.New("no renewed_orderId in the answer")}
	}
	return r, nil
}

// CurrentOrder is where Current ended: the chain of order numbers from the
// one asked about to the newest, and the newest order's details.
type CurrentOrder struct {
	Chain []int64
	Order *Order
}

// Current follows RenewCheck from orderID to its newest renewal and returns
// the chain and the newest order, which may be pending: a renewal is an
// order before it has a certificate (Order.Issued tells). A newest order
// that is canceled or rejected is an *EndedError (ErrOrderEnded). It stops
// at a cycle or after the chain limit (WithMaxChain) with an error, never
// looping.
func (c *Client) Current(ctx context.Context, orderID int64) (*CurrentOrder, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	chain := []int64{orderID}
	seen := map[int64]bool{orderID: true}
	id := orderID
	for {
		r, err := c.RenewCheck(ctx, id)
		if errors.Is(err, ErrNotRenewed) || errors.Is(err, ErrNoSuchOrder) {
			// The end of the chain. A service that does not tell "not renewed"
			// from "no such order" is asked for the order itself below, which
			// then fails if it really does not exist.
			break
		}
		if err != nil {
			return nil, err
		}
		next := r.RenewedOrderID.Value
		if seen[next] {
			return nil, fmt.Errorf("%w: renewal chain %v loops back to order %d", ErrBadChain, chain, next)
		}
		if len(chain) > c.maxChain {
			return nil, fmt.Errorf("%w: renewal chain from order %d is longer than %d", ErrBadChain, orderID, c.maxChain)
		}
		seen[next] = true
		chain = append(chain, next)
		id = next
	}
	o, err := c.OrderInfo(ctx, id)
	if errors.Is(err, ErrNoSuchOrder) && len(chain) > 1 {
		// The chain names an order the service does not give this member.
		return nil, fmt.Errorf("client: order %d was renewed by order %d, which is missing: %w",
			chain[len(chain)-2], id, err)
	}
	if err != nil {
		return nil, err
	}
	if o.OrderID != id {
		// Automation must never be pointed at an order outside the chain.
		return nil, fmt.Errorf("%w: OrderInfo for order %d answered order %d", ErrBadChain, id, o.OrderID)
	}
	if o.Ended() {
		return nil, &EndedError{Chain: chain, Order: o}
	}
	return &CurrentOrder{Chain: chain, Order: o}, nil
}

// Call sends one action and returns the answer's body unchanged when it is
// not a failure. orderID 0 leaves orderId out of the request. Failures come
// back as *APIError (the service's error_message), *HTTPError (an answer
// that is not the service's JSON) or a network or context error.
func (c *Client) Call(ctx context.Context, action string, orderID int64) (json.RawMessage, error) {
	params := map[string]any{}
	if orderID != 0 {
		params["orderId"] = orderID
	}
	return c.call(ctx, action, params)
}

// call is Call with the action's parameters, beside the credentials.
func (c *Client) call(ctx context.Context, action string, params map[string]any) (json.RawMessage, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	req := map[string]any{"AccessName": c.name, "AccessKey": c.key, "action": action}
	for k, v := range params {
		req[k] = v
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		raw, wait, err := c.try(ctx, body)
		if err == nil || wait < 0 || attempt >= c.attempts {
			return raw, err
		}
		if wait == 0 {
			wait = c.backoffFor(attempt)
		}
		if deadline, ok := ctx.Deadline(); wait > c.maxBackoff || ok && time.Until(deadline) < wait {
			// The server asks for a longer wait than we may make (or than
			// the call has left): give up now, with the reason.
			return nil, err
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// try makes one attempt. wait says what to do on failure: -1 never retry,
// 0 retry after the usual backoff, >0 retry after that long (Retry-After).
func (c *Client) try(ctx context.Context, body []byte) (json.RawMessage, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, -1, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.httpClient.Do(req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// The attempt failed of itself (refused, say) as the call's
			// time ran out: both are the answer.
			return nil, -1, fmt.Errorf("client: %w: %w", ctx.Err(), err)
		}
		if ctx.Err() != nil {
			return nil, -1, ctx.Err()
		}
		return nil, 0, fmt.Errorf("client: %w", err) // network trouble: every action is a read, so retrying is safe
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, ctx.Err()
		}
		return nil, 0, fmt.Errorf("client: reading the answer: %w", err)
	}
	retry := time.Duration(-1)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		retry = retryAfter(resp.Header.Get("Retry-After"))
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil, retry, &HTTPError{Status: resp.StatusCode, Body: snippet(raw), Err: errors.New("the answer is not a JSON object")}
	}
	if msg, ok := fields["error_message"]; ok {
		e := parseAPIError(msg, resp.StatusCode)
		e.RetryAfter = max(retry, 0)
		if e.temporary() && retry < 0 {
			retry = 0 // a busy or rate-limited answer inside a 200
		}
		return nil, retry, e
	}
	if resp.StatusCode != http.StatusOK {
		return nil, retry, &HTTPError{Status: resp.StatusCode, Body: snippet(raw), Err: errors.New("unexpected status")}
	}
	return raw, -1, nil
}

// retryAfter reads a Retry-After header (seconds or an HTTP date); 0 when
// it is absent, unreadable or past.
func retryAfter(h string) time.Duration {
	var d time.Duration
	if secs, err := strconv.Atoi(h); err == nil && secs >= 0 {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = time.Until(t)
	}
	return max(d, 0)
}

// backoffFor is the wait before retry n (1-based): exponential, capped,
// and jittered (half of it random) so that many clients do not retry in step.
func (c *Client) backoffFor(n int) time.Duration {
	d := c.backoff << (n - 1)
	if d <= 0 || d > c.maxBackoff {
		d = c.maxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func snippet(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
