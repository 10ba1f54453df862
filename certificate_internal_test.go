package certorder

import (
	"strings"
	"testing"
)

// HexKey gives what it gave when it was a strings.Replacer and ToLower,
// and allocates nothing for a key already in its look-up form.
func FuzzHexKey(f *testing.F) {
	for _, s := range []string{"", "ab:CD ef", "0A1B", "00:0a", "deadbeef", "Ä:ß K", "\xff:A", " : "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := HexKey(s), strings.ToLower(strings.NewReplacer(":", "", " ", "").Replace(s)); got != want {
			t.Errorf("HexKey(%q) = %q, want %q", s, got, want)
		}
	})
}

func TestHexKeyNoAllocation(t *testing.T) {
	key := "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
	if n := testing.AllocsPerRun(100, func() { HexKey(key); SerialKey(key) }); n != 0 {
		t.Errorf("%v allocations for a key in look-up form, want 0", n)
	}
}
