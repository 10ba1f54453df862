package postgres

import (
	"context"
	"errors"
	"fmt"
)

// Backup is left to PostgreSQL's own tools: it returns an error wrapping
// errors.ErrUnsupported that says what to run (docs/OPERATIONS.md, Backups).
func (s *Store) Backup(context.Context, string, bool) error {
	return fmt.Errorf("%w: back up PostgreSQL with pg_dump "+
		"(pg_dump --format=custom --file=certorder.dump \"$CERTORDER_DB\"; see docs/OPERATIONS.md, Backups)", errors.ErrUnsupported)
}
