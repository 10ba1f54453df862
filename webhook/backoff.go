package webhook

import (
	"math/rand/v2"
	"time"
)

// schedule is the Standard Webhooks example schedule: the wait after each
// failed attempt. With the first, immediate attempt it makes MaxAttempts
// attempts over 75 h 35 min (about three days) before a message is failed:
//
//	attempt  1  at  0:00:00  (immediately)
//	attempt  2  at  0:00:05  (+5 s)
//	attempt  3  at  0:05:05  (+5 min)
//	attempt  4  at  0:35:05  (+30 min)
//	attempt  5  at  2:35:05  (+2 h)
//	attempt  6  at  7:35:05  (+5 h)
//	attempt  7  at 17:35:05  (+10 h)
//	attempt  8  at 31:35:05  (+14 h)
//	attempt  9  at 51:35:05  (+20 h)
//	attempt 10  at 75:35:05  (+24 h)
//
// Each wait is jittered by ±20 % (Backoff), so the whole span is 60 to 91 h.
var schedule = [...]time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	14 * time.Hour,
	20 * time.Hour,
	24 * time.Hour,
}

// MaxAttempts is how many attempts a message gets, the first included;
// after the last one fails the message is failed for good.
const MaxAttempts = len(schedule) + 1

// jitter is the spread of a wait around the schedule: ±20 %.
const jitter = 0.2

// Backoff is the wait after failed attempt number attempt (1 = the first,
// immediate attempt) before the next one: the schedule's wait times a
// random factor in [0.8, 1.2), so that the messages of an endpoint that was
// down for a while do not all come back at the same moment. Attempts past
// the schedule get its last wait; the caller stops at MaxAttempts. r nil
// means the global source.
func Backoff(attempt int, r *rand.Rand) time.Duration {
	i := min(max(attempt, 1), len(schedule)) - 1
	f := rand.Float64()
	if r != nil {
		f = r.Float64()
	}
	return time.Duration(float64(schedule[i]) * (1 - jitter + 2*jitter*f))
}
