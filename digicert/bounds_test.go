package digicert_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/digicert/digicerttest"
)

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A CertCentral that pages forever: each walk stops at its bound with
// ErrTooLarge; one that answers a huge page: the read stops at
// MaxAnswerBytes, without retrying.
func TestReadBounds(t *testing.T) {
	e := newEnv(t, digicerttest.Options{NoLimits: true}, digicert.WithReadBounds(5, 0))
	e.sim.SetHostile(digicerttest.Hostile{EndlessPages: true})
	ctx := context.Background()
	pages := 0
	var err error
	for _, perr := range e.c.OrderPages(ctx, digicert.ListOptions{}) {
		if perr != nil {
			err = perr
			break
		}
		pages++
	}
	if pages != 5 || !errors.Is(err, digicert.ErrTooLarge) || !strings.Contains(err.Error(), "more than 5 pages") {
		t.Errorf("endless List orders: %d pages, then %v", pages, err)
	}
	var changes []digicert.StatusChange
	n := allocated(func() { changes, err = e.c.StatusChangesSince(ctx, start.Add(-time.Hour)) })
	if changes != nil || !errors.Is(err, digicert.ErrTooLarge) || !strings.Contains(err.Error(), "more than 100000 status changes") {
		t.Errorf("endless status change list: %d changes, %v", len(changes), err)
	}
	t.Logf("endless status change list: stopped after %d requests, %d MB allocated", e.sim.Requests()[digicerttest.EndpointStatusChanges], n>>20)
	if n > 256<<20 {
		t.Errorf("the endless status change list allocated %d MB", n>>20)
	}

	e.sim.SetHostile(digicerttest.Hostile{HugeAnswer: 200 << 20})
	e.sim.ResetCounts()
	n = allocated(func() { changes, err = e.c.StatusChangesSince(ctx, start.Add(-time.Hour)) })
	if changes != nil || !errors.Is(err, digicert.ErrTooLarge) || e.sim.Requests()[digicerttest.EndpointStatusChanges] != 1 {
		t.Errorf("a 200 MB answer: %v after %v requests", err, e.sim.Requests())
	}
	if n > 64<<20 {
		t.Errorf("a 200 MB answer allocated %d MB", n>>20)
	}
	noKey(t, err)
}

// An error answer of 50 MB full of terminal escapes and the key: the
// error keeps a short, printable excerpt without the key.
func TestErrorExcerpt(t *testing.T) {
	e := newEnv(t, digicerttest.Options{NoLimits: true})
	e.sim.SetHostile(digicerttest.Hostile{ErrorBody: 50 << 20})
	e.sim.FailNext(1, 400)
	_, err := e.c.OrderInfo(context.Background(), 1)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	noKey(t, err)
	if len(msg) > 2048 || strings.ContainsAny(msg, "\x1b\x07\u202e") || !strings.Contains(msg, `\u001b`) {
		t.Errorf("the error (%d bytes): %.300q", len(msg), msg)
	}
	// A short one in the documented shape: its message is decoded, so the
	// escapes are real characters until excerpt writes them out.
	e.sim.SetHostile(digicerttest.Hostile{ErrorBody: 1000})
	e.sim.FailNext(1, 400)
	_, err = e.c.OrderInfo(context.Background(), 1)
	noKey(t, err)
	if msg := err.Error(); len(msg) > 2048 || strings.ContainsAny(msg, "\x1b\x07\u202e") ||
		!strings.Contains(msg, `server_error "\x1b]0;pwned\a`) || !strings.Contains(msg, "[redacted]") {
		t.Errorf("the error (%d bytes): %.300q", len(msg), msg)
	}
}
