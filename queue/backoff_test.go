package queue_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/certorder/certorder/queue"
)

func TestBackoffSchedule(t *testing.T) {
	t.Parallel()
	nominal := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
		5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}
	if queue.MaxAttempts != len(nominal)+1 {
		t.Fatalf("MaxAttempts = %d, want %d", queue.MaxAttempts, len(nominal)+1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var total time.Duration
		for attempt := 1; attempt < queue.MaxAttempts; attempt++ {
			d := queue.Backoff(attempt, r)
			lo, hi := nominal[attempt-1]*8/10, nominal[attempt-1]*12/10
			if d < lo || d >= hi {
				t.Fatalf("Backoff(%d) = %v, want in [%v, %v)", attempt, d, lo, hi)
			}
			total += d
		}
		if total < 60*time.Hour || total > 91*time.Hour {
			t.Fatalf("the schedule spans %v, want about three days", total)
		}
	}
	if d := queue.Backoff(1, r); d > 10*time.Second {
		t.Errorf("first retry after %v, want within 10s", d)
	}
	// Out of range: before the first attempt counts as the first; past the end as the last.
	if d := queue.Backoff(0, r); d > 6*time.Second {
		t.Errorf("Backoff(0) = %v", d)
	}
	if d := queue.Backoff(50, r); d < 19*time.Hour || d > 29*time.Hour {
		t.Errorf("Backoff(50) = %v", d)
	}
	// Jitter: the same attempt does not always wait the same.
	a, b := queue.Backoff(3, rand.New(rand.NewPCG(1, 1))), queue.Backoff(3, rand.New(rand.NewPCG(2, 2)))
	if a == b {
		t.Errorf("two sources give the same wait %v", a)
	}
	if d := queue.Backoff(2, nil); d < 4*time.Minute || d >= 6*time.Minute {
		t.Errorf("Backoff(2, nil) = %v", d)
	}
}
