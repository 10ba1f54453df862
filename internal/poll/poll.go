// Package poll waits for a condition: it asks again every few
// milliseconds until the condition holds or a deadline passes, instead of
// sleeping a fixed time in the hope that it holds by then (too short on a
// busy machine, too long on an idle one).
package poll

import (
	"testing"
	"time"
)

// The wait between two asks starts at firstInterval, so that a wait ends
// soon after its condition holds, and doubles up to maxInterval, so that a
// long wait on a costly condition (a CLI command that opens a store, an
// HTTP request) does not take the CPU the test is waiting for: at a fixed
// 10 ms, cmd/certorder's polls were about a tenth of its tests' CPU.
const (
	firstInterval = 5 * time.Millisecond
	maxInterval   = 100 * time.Millisecond
)

// Within asks cond, then again after firstInterval, doubling the wait up to
// maxInterval, until it returns true or d has passed; it reports whether
// cond held. cond runs on the caller's goroutine, so a test's cond may call
// t.Fatal.
func Within(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	wait := firstInterval
	for !cond() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(wait)
		wait = min(2*wait, maxInterval)
	}
	return true
}

// Until is Within that fails t, saying what did not come true, when d
// passes first.
func Until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(d, cond) {
		t.Fatalf("not within %v: %s", d, what)
	}
}
