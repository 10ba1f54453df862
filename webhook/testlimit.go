package webhook

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Test events a member may send, per instance: TestBurst at once, then
// one every TestEvery. A test event goes to the member's own endpoint, so
// more would only let one member keep the worker's places busy.
const (
	TestBurst = 5
	TestEvery = time.Minute
)

// TestLimiter counts each member's test events (TestBurst, then one every
// TestEvery). It forgets a member once its bucket is full again, so its
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

// Allow takes one test event of member at now; when refused it returns
// false and how long until the next one is allowed.
func (l *TestLimiter) Allow(member int64, now time.Time) (bool, time.Duration) {
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
	if lim.AllowN(now, 1) {
		return true, 0
	}
	r := lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, wait
}
