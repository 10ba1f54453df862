// Package poll waits for a condition: it asks again every few
// milliseconds until the condition holds or a deadline passes, instead of
// sleeping a fixed time in the hope that it holds by then (too short on a
// busy machine, too long on an idle one).
package poll

import (
	"testing"
	"time"
)

// Interval is how long Within waits between two asks: short, so that a
// wait ends soon after its condition holds.
const Interval = 10 * time.Millisecond

// Within asks cond, then again every Interval, until it returns true or d
// has passed; it reports whether cond held. cond runs on the caller's
// goroutine, so a test's cond may call t.Fatal.
func Within(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(Interval)
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
