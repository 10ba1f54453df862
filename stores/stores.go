// Package stores opens the store a DSN names: the scheme picks the backend.
package stores

import (
	"context"
	"strings"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/postgres"
	"github.com/certorder/certorder/sqlite"
)

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens a postgres:// or postgresql:// URL with the PostgreSQL store,
// and anything else as a SQLite file path (an optional sqlite: prefix is dropped).
func Open(ctx context.Context, dsn string) (certorder.Store, error) {
	if IsPostgres(dsn) {
		return postgres.Open(ctx, dsn)
	}
	return sqlite.Open(ctx, strings.TrimPrefix(dsn, "sqlite:"))
}
