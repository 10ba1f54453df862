package main

// defaultDB is the SQLite file used when neither --db nor CERTORDER_DB is set.
const defaultDB = "./certorder.db"

// dbHelp is the help of --db.
const dbHelp = "store: a SQLite file path, or a postgres:// URL"
