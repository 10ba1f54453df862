package main

import (
	"context"
	"flag"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/stores"
)

// defaultDB is the SQLite file used when neither --db nor CERTORDER_DB is set.
const defaultDB = "./certorder.db"

// dbFlag adds --db; CERTORDER_DB sets it too (see applyEnv).
func (e *env) dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", defaultDB, "store: a SQLite file path, or a postgres:// URL (env CERTORDER_DB)")
}

// dbEnv maps --db to its variable, for applyEnv.
var dbEnv = map[string]string{"db": "CERTORDER_DB"}

// openStore opens the store a --db value names: the URL scheme picks the backend.
func openStore(ctx context.Context, dsn string) (certorder.Store, error) {
	return stores.Open(ctx, dsn)
}
