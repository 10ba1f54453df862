package poll_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/poll"
)

func TestWithin(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	if !poll.Within(10*time.Second, func() bool { return n.Add(1) == 3 }) || n.Load() != 3 {
		t.Fatalf("a condition true on its third ask: asked %d times", n.Load())
	}
	start := time.Now()
	if poll.Within(50*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition never true held")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before the deadline", took)
	}
	asked := 0
	if !poll.Within(0, func() bool { asked++; return true }) || asked != 1 {
		t.Fatalf("a condition true at once: asked %d times", asked)
	}
	// The waits double: 5, 10, 20, 40, 80 ms, then 100 ms each; about ten
	// asks in half a second, not the fifty of a fixed 10 ms.
	asked = 0
	poll.Within(500*time.Millisecond, func() bool { asked++; return false })
	if asked > 15 {
		t.Fatalf("asked %d times in 500 ms", asked)
	}
}
