package postgres_test

import (
	"testing"

	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/postgres"
)

// admin backup is SQLite's: PostgreSQL's store has no Backup to refuse
// with (admin backup gives BackupAdvice before connecting).
func TestNoBackup(t *testing.T) {
	t.Parallel()
	if _, ok := any(&postgres.Store{}).(storekit.BackupStore); ok {
		t.Fatal("the PostgreSQL store offers a Backup")
	}
}
