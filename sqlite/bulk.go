package sqlite

import (
	"context"
	"database/sql"
	"strconv"
)

// bulkPragmas are the write connection's settings for the transactions
// that write many orders, an import's and a restore's; bulkTx sets them for
// the transaction and sets them back after. What decided them (the CPU
// profile of BenchmarkImportFile):
//
//   - temp_store MEMORY: each multi-row statement keeps a statement
//     journal, the pages it changes as they were before it, to undo that
//     statement alone; SQLite keeps it in a temporary file unless temp_store
//     is MEMORY. Importing 200,000 orders, the writes to that file took
//     0.58 s of 13.8 s of CPU; in memory, 0.21 s. It holds the pages of one
//     statement (500 orders).
//   - mmap_size 0 and a page cache of 32 MiB: with the file mapped, SQLite
//     looks for every page it reads in the WAL's index before its page
//     cache, and one transaction's WAL grows as large as what it writes
//     (2 GB for 1M orders), each look-up scanning more of the index.
//     Importing 1M orders, those look-ups took 7.3 s of 73 s of CPU and the
//     batches' reads (Links) 5.3 s; unmapped with 32 MiB of cache (the
//     B-trees' inner pages stay cached) 3.7 s and 1.4 s, the same as with
//     128 MiB; the import 78 and 89 s before, 65 and 67 s after (two runs
//     each, load 3-4). The default cache (2 MB) without the map was not
//     tried: the inner pages of the table and its five indexes would not
//     stay in it.
var bulkPragmas = []struct{ name, value string }{
	{"temp_store", "MEMORY"},
	{"mmap_size", "0"},
	{"cache_size", "-32768"}, // KiB
}

// bulkTx is inTx for an import or a restore, with bulkPragmas.
func (s *Store) bulkTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, p := range bulkPragmas {
		var was string
		if err := conn.QueryRowContext(ctx, `PRAGMA `+p.name).Scan(&was); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, `PRAGMA `+p.name+` = `+p.value); err != nil {
			return err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA `+p.name+` = `+was)
	}
	return inTx(ctx, conn, fn)
}

// idsJSON is ids as a JSON array, for json_each.
func idsJSON(ids []int64) string {
	b := make([]byte, 0, len(ids)*8+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}
