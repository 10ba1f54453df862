//go:build unix

package sqlite

import (
	"fmt"
	"os"
	"syscall"
)

// mapShared maps the first n bytes of a file, shared and read-only: the
// same pages every process that maps the file sees.
func mapShared(path string, n int) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() < int64(n) {
		return nil, nil, fmt.Errorf("%s: %d bytes, want at least %d", path, fi.Size(), n)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return mem, func() error { return syscall.Munmap(mem) }, nil
}
