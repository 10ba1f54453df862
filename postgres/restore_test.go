package postgres_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/postgres"
	"github.com/certorder/certorder/storetest"
)

// A restore drops the secondary indexes and foreign keys of orders for its
// COPY and makes them again: after it, and after a restore that failed,
// orders has the very indexes and constraints of a new store, all valid.
func TestRestoreRebuildsOrderIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	definitions := func() []string {
		t.Helper()
		rows, _ := conn.Query(ctx, `SELECT pg_get_indexdef(indexrelid) || CASE WHEN indisvalid AND indisready THEN '' ELSE ' (not valid)' END
			FROM pg_index WHERE indrelid = 'orders'::regclass
			UNION ALL
			SELECT conname || ' ' || pg_get_constraintdef(oid) || CASE WHEN convalidated THEN '' ELSE ' (not validated)' END
			FROM pg_constraint WHERE conrelid = 'orders'::regclass`)
		defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(defs)
		return defs
	}
	want := definitions()
	if len(want) < 5 || !slices.ContainsFunc(want, func(d string) bool { return strings.Contains(d, "FOREIGN KEY (member_id)") }) {
		t.Fatalf("a new store's orders has %q", want)
	}

	src, err := postgres.Open(ctx, testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.AddMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	var docs []string
	for id := int64(1); id <= 20; id++ {
		docs = append(docs, storetest.OrderJSON(id, id%2*(id+1), "2030-01-01"))
	}
	if _, err := src.ImportOrders(ctx, "alice", storetest.Orders(t, docs...)); err != nil {
		t.Fatal(err)
	}
	var dump bytes.Buffer
	if err := export.Write(ctx, src, &dump); err != nil {
		t.Fatal(err)
	}

	broken := dump.String() + `{"type":"order","member":"nobody","order_id":99,"doc":` + storetest.OrderJSON(99, 0, "2030-01-01") + "}\n"
	if err := s.Restore(ctx, export.Read(strings.NewReader(broken))); err == nil {
		t.Fatal("restored an order of a member not in the export")
	}
	if got := definitions(); !slices.Equal(got, want) {
		t.Fatalf("after a failed restore orders has\n%q\nwant\n%q", got, want)
	}
	if err := s.Restore(ctx, export.Read(bytes.NewReader(dump.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := definitions(); !slices.Equal(got, want) {
		t.Fatalf("after a restore orders has\n%q\nwant\n%q", got, want)
	}
	var again bytes.Buffer
	if err := export.Write(ctx, s, &again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump.Bytes(), again.Bytes()) {
		t.Fatalf("the restored store exports differently:\n%s\n---\n%s", dump.String(), again.String())
	}
	// The foreign key holds again.
	if _, err := conn.Exec(ctx, `INSERT INTO orders (id, member_id, common_name, status, valid_till, doc, cert_end, updated_at)
		VALUES (1000, 424242, '', '', '', '', 0, now())`); err == nil || !strings.Contains(err.Error(), "foreign key") {
		t.Fatalf("an order of no member was stored: %v", err)
	}
}
