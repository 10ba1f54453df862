package postgres

// BackupAdvice says how to back up a PostgreSQL store: with PostgreSQL's
// own tools (docs/OPERATIONS.md, Backups). The store has no Backup: copying
// itself (storekit.BackupStore) is SQLite's.
const BackupAdvice = "back up PostgreSQL with pg_dump " +
	"(pg_dump --format=custom --file=certorder.dump \"$CERTORDER_DB\"; see docs/OPERATIONS.md, Backups)"
