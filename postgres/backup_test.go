package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/certorder/certorder/postgres"
)

// admin backup is SQLite's: PostgreSQL's store says to use pg_dump, as an
// unsupported operation, without touching the database.
func TestBackupSaysPgDump(t *testing.T) {
	t.Parallel()
	var s *postgres.Store
	err := s.Backup(context.Background(), "/nonexistent/copy.db", true)
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("Backup = %v, want ErrUnsupported naming pg_dump", err)
	}
}
