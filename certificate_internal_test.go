package certorder

import (
	"math/rand/v2"
	"testing"
)

// sameSerial is SerialKey's equality without the keys, for any text:
// separators anywhere, leading zeros, either case, and the non-ASCII
// letters strings.ToLower folds (the Kelvin sign is a k).
func TestSameSerialIsSerialKeyEquality(t *testing.T) {
	parts := []string{"0", "0", "a", "A", "b", "1", ":", " ", "\u212a", "k", "\xff", "é", "É"}
	r := rand.New(rand.NewPCG(46, 6))
	random := func() string {
		s := ""
		for range r.IntN(7) {
			s += parts[r.IntN(len(parts))]
		}
		return s
	}
	fixed := [][2]string{{"0A:BC", "abc"}, {"00:00", ""}, {"0:0a", "A"}, {"ab", "abc"}, {"\u212a1", "k1"}, {"0 0\u212a", "K"}, {"a:", "a"}}
	for i := range 20000 {
		a, b := random(), random()
		if i < len(fixed) {
			a, b = fixed[i][0], fixed[i][1]
		}
		if got, want := sameSerial(a, b), SerialKey(a) == SerialKey(b); got != want {
			t.Fatalf("sameSerial(%q, %q) = %v, SerialKey says %v", a, b, got, want)
		}
	}
}
