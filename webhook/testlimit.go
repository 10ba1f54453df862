package webhook

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Messages a member may send by hand on the web page, test events and
// redeliveries together, per instance: TestBurst at once, then one every
// TestEvery. Such a message goes to the member's own endpoint, so more
// would only let one member keep the worker's places busy (and write an
// audit entry each).
const (
	TestBurst = 5
	TestEvery = time.Minute
)

// TestLimiter counts each member's messages sent by hand, test events and
// redeliveries (TestBurst, then one every TestEvery). It forgets a member once its bucket is full again, so its
// memory follows the members sending test events. Safe for concurrent use.
type TestLimiter struct {
	mu      sync.Mutex
	members map[int64]*rate.Limiter
	swept   time.Time
}

// NewTestLimiter returns an empty limiter.
func NewTestLimiter() *TestLimiter {
	return &TestLimiter{members: map[int64]*rate.Limiter{}}
}

// Allow takes one message of member at now. When refused it returns
// false and how long until the next one is allowed; when allowed, undo
// gives the message back, for one that was not sent after all (a
// redelivery of a delivery still pending): only what is sent counts.
func (l *TestLimiter) Allow(member int64, now time.Time) (ok bool, wait time.Duration, undo func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > TestEvery*TestBurst {
		for id, lim := range l.members {
			if lim.TokensAt(now) >= TestBurst {
				delete(l.members, id)
			}
		}
		l.swept = now
	}
	lim := l.members[member]
	if lim == nil {
		lim = rate.NewLimiter(rate.Every(TestEvery), TestBurst)
		l.members[member] = lim
	}
	r := lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return false, wait, nil
	}
	return true, 0, func() { r.CancelAt(now) }
}
