package digicert

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Options only the tests use.

// WithReadBounds lowers MaxListPages and MaxStatusChanges (for tests);
// zero keeps a default.
func WithReadBounds(listPages, statusChanges int) Option {
	return func(c *Client) error {
		if listPages > 0 {
			c.maxPages = listPages
		}
		if statusChanges > 0 {
			c.maxChanges = statusChanges
		}
		return nil
	}
}

// WithHTTPClient sets the HTTP client (proxy, TLS, timeouts). Its redirect
// policy is replaced: the Client follows no redirect, so the key header
// never travels to another address.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("digicert: WithHTTPClient: nil client")
		}
		c.hc = hc
		return nil
	}
}

// WithRetry sets how many requests one call may make in all (at least 1),
// the backoff before the first retry and the cap on any backoff. Default:
// 8 attempts, 1s, 60s; the backoff doubles with each retry, with jitter.
func WithRetry(attempts int, base, maxBackoff time.Duration) Option {
	return func(c *Client) error {
		if attempts < 1 || base <= 0 || maxBackoff < base {
			return fmt.Errorf("digicert: WithRetry(%d, %v, %v): need attempts >= 1 and 0 < base <= max", attempts, base, maxBackoff)
		}
		c.attempts, c.backoff, c.maxBackoff = attempts, base, maxBackoff
		return nil
	}
}

// WithClockSkew sets how far DigiCert's clock may be from ours (default 2
// minutes); StatusChangesSince widens its window by that much.
func WithClockSkew(d time.Duration) Option {
	return func(c *Client) error {
		if d < 0 {
			return errors.New("digicert: WithClockSkew: negative skew")
		}
		c.skew = d
		return nil
	}
}
