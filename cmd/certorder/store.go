package main

import "flag"

// defaultDB is the SQLite file used when neither --db nor CERTORDER_DB is set.
const defaultDB = "./certorder.db"

// dbHelp is the help of --db.
const dbHelp = "store: a SQLite file path, or a postgres:// URL"

// dbFlag adds --db; CERTORDER_DB sets it too (see applyEnv). stores.Open
// picks the backend by the value's scheme.
func (e *env) dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", defaultDB, dbHelp+" (env CERTORDER_DB)")
}

// dbEnv maps --db to its variable, for applyEnv.
var dbEnv = map[string]string{"db": "CERTORDER_DB"}
