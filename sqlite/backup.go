package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the store to the new file dst, while
// the store stays in use, and with withAudit also the audit trail, to
// AuditPath(dst). dst must not exist yet. Opening dst as a store gives the
// data as committed when the backup began; writes made during it are not in
// the copy.
//
// It runs SQLite's VACUUM INTO on a connection of its own: a read
// transaction, so it sees one snapshot and, in WAL mode, does not hold up
// the store's writer; the copy comes out compacted. (The online backup API
// would also do, but needs the driver's own connection type; VACUUM INTO is
// plain SQL.)
func (s *Store) Backup(ctx context.Context, dst string, withAudit bool) error {
	src := s.path
	if err := vacuumInto(ctx, src, dst); err != nil {
		return err
	}
	if withAudit {
		if err := vacuumInto(ctx, AuditPath(src), AuditPath(dst)); err != nil {
			return fmt.Errorf("%w (the store's copy %s is complete)", err, dst)
		}
	}
	return nil
}

// vacuumInto copies the database file src to dst through a temporary file
// beside dst, so that a failed or interrupted copy never looks like a backup.
func vacuumInto(ctx context.Context, src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("sqlite: backup: %s already exists; give a new file name", dst)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp-*")
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	tmpName := tmp.Name()
	tmp.Close() // VACUUM INTO accepts an empty file
	done := false
	defer func() {
		if !done {
			os.Remove(tmpName)
		}
	}()

	db, err := sql.Open("sqlite", "file:"+src+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, tmpName); err != nil {
		return fmt.Errorf("sqlite: backup of %s: %w", src, err)
	}
	if err := syncFile(tmpName); err != nil {
		return err
	}
	if err := os.Rename(tmpName, dst); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	done = true
	// The rename itself; best effort, as not every system can sync a
	// directory (Windows cannot).
	_ = syncFile(filepath.Dir(dst))
	return nil
}

// syncFile flushes a file or directory to disk, so that a backup survives
// a crash right after it is reported done.
func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sqlite: backup: syncing %s: %w", name, err)
	}
	return nil
}
