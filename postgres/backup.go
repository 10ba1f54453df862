package postgres

import (
	"context"
	"errors"
	"fmt"
)

// BackupAdvice says how to back up a PostgreSQL store: with PostgreSQL's
// own tools (docs/OPERATIONS.md, Backups).
const BackupAdvice = "back up PostgreSQL with pg_dump " +
	"(pg_dump --format=custom --file=certorder.dump \"$CERTORDER_DB\"; see docs/OPERATIONS.md, Backups)"

// Backup is left to PostgreSQL's own tools: it returns an error wrapping
// errors.ErrUnsupported that says what to run (BackupAdvice).
func (s *Store) Backup(context.Context, string, bool) error {
	return fmt.Errorf("%w: %s", errors.ErrUnsupported, BackupAdvice)
}
