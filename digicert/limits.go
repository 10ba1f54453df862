package digicert

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
)

// Limit is one of DigiCert's per-key request limits: at most Requests
// requests in any rolling window of length Per.
type Limit struct {
	Requests int
	Per      time.Duration
}

// String gives the limit as "1000 per 3m0s".
func (l Limit) String() string { return fmt.Sprintf("%d per %v", l.Requests, l.Per) }

// DocumentedLimits returns the per-key limits of DigiCert's "Rate limits"
// page (dev.digicert.com/en/certcentral-apis/services-api/rate-limits.html):
// 1000 requests per 3 minutes and 100 requests per 5 seconds, both over a
// rolling window.
func DocumentedLimits() []Limit {
	return []Limit{
		{Requests: 1000, Per: 3 * time.Minute},
		{Requests: 100, Per: 5 * time.Second},
	}
}

// headroom is the share of each limit the client allows itself. The rest
// absorbs the difference between when a request leaves and when DigiCert
// counts it.
const headroom = 0.95

// bucketFor derives a token bucket that never lets more than
// headroom*l.Requests requests into any window of length l.Per: a bucket of
// burst b refilled at rate r admits at most b + r*Per requests in such a
// window, so b + r*Per is held to the budget.
func bucketFor(l Limit) (*rate.Limiter, error) {
	if l.Requests < 1 || l.Per <= 0 {
		return nil, fmt.Errorf("digicert: limit %v: need at least 1 request per positive duration", l)
	}
	budget := max(1, int(float64(l.Requests)*headroom))
	burst := max(1, budget/20)
	perSecond := float64(budget-burst) / l.Per.Seconds()
	if budget == burst {
		// One request per window: refill a little slower than one per Per so
		// two never fall into the same window.
		perSecond = 0.99 / l.Per.Seconds()
	}
	return rate.NewLimiter(rate.Limit(perSecond), burst), nil
}

// wait takes a token from every limiter, sleeping (with the client's sleep)
// until all of them allow the request. It returns how long it slept.
func (c *Client) wait(ctx context.Context) (time.Duration, error) {
	if len(c.limiters) == 0 {
		return 0, nil
	}
	now := c.now()
	var delay time.Duration
	reservations := make([]*rate.Reservation, 0, len(c.limiters))
	for _, l := range c.limiters {
		r := l.ReserveN(now, 1)
		if !r.OK() { // cannot happen with burst >= 1
			return 0, fmt.Errorf("digicert: the rate limiter refused a single request")
		}
		reservations = append(reservations, r)
		delay = max(delay, r.DelayFrom(now))
	}
	if delay <= 0 {
		return 0, nil
	}
	if err := c.sleep(ctx, delay); err != nil {
		for _, r := range reservations {
			r.CancelAt(c.now())
		}
		return 0, fmt.Errorf("digicert: waiting for the rate limiter: %w", err)
	}
	return delay, nil
}
