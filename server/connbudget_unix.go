//go:build unix

package server

import (
	"math"
	"syscall"
)

// descriptorLimit is the process's soft RLIMIT_NOFILE (Go raises it to the
// hard limit at start).
func descriptorLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 0
	}
	return int(min(rl.Cur, math.MaxInt32))
}
