//go:build unix

package sqlite

import (
	"fmt"
	"os"
	"syscall"
)

// mapShared maps the first n bytes of a file, shared and read-only: the
// same pages every process that maps the file sees.
//
// The descriptor stays open until the mapping is undone, although the
// mapping does not need it: closing any descriptor of a file drops every
// POSIX advisory lock the process holds on that file, and the file is
// SQLite's -shm, on which this process's connections hold their locks.
// Closing it here dropped their "dead man switch" read lock, so the next
// process to open the database believed itself alone, reset the -shm file
// under our mappings, and our readers failed with SQLITE_IOERR_IN_PAGE
// ("disk I/O error", HTTP 503) while admin commands ran
// (TestSQLiteSharedMemoryLockKept).
func mapShared(path string, n int) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if fi.Size() < int64(n) {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %d bytes, want at least %d", path, fi.Size(), n)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return mem, func() error {
		err := syscall.Munmap(mem)
		// Closing drops this process's locks on the file: only once the
		// store's connections are closed (cache.close runs before).
		f.Close()
		return err
	}, nil
}
