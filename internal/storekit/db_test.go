package storekit

import (
	"testing"
	"time"
)

func TestRebind(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`a = ? AND b = ?`, `a = $1 AND b = $2`},
		{`x LIKE '%?%' AND y = ? AND "odd?" = ?`, `x LIKE '%?%' AND y = $1 AND "odd?" = $2`},
		{`VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, `VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`},
	} {
		if got := Rebind(c.in); got != c.want {
			t.Errorf("Rebind(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTimeScan(t *testing.T) {
	at := time.Date(2026, 11, 28, 4, 5, 6, 789000, time.UTC)
	tokyo := at.In(time.FixedZone("JST", 9*3600))
	for _, src := range []any{at, tokyo, at.Format(TimeLayout), []byte(at.Format(TimeLayout))} {
		var got Time
		if err := got.Scan(src); err != nil || !got.T.Equal(at) || got.T.Location() != time.UTC {
			t.Errorf("Scan(%#v) = %v, %v; want %v in UTC", src, got.T, err, at)
		}
	}
	got := Time{T: at}
	if err := got.Scan(nil); err != nil || !got.T.IsZero() {
		t.Errorf("Scan(nil) = %v, %v; want the zero time", got.T, err)
	}
	if err := got.Scan(42); err == nil {
		t.Error("Scan(42): no error")
	}
}
