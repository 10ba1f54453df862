package main

import "github.com/certorder/certorder/stores"

// defaultDB is the SQLite file used when neither --db nor CERTORDER_DB is set.
const defaultDB = "./certorder.db"

// dbHelp is the help of --db.
const dbHelp = "store: a SQLite file path, or a postgres:// URL"

// checkDSN is a usage error for a --db that looks like a URL no store opens
// (stores.CheckDSN): checked before anything else, it never becomes a
// SQLite file of that name, nor advice to create one.
func checkDSN(cmd, db string) error {
	if err := stores.CheckDSN(db); err != nil {
		return usageError("%s: --db (or CERTORDER_DB) %s: %v", cmd, redactDSN(db), err)
	}
	return nil
}
