package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/importfile"
)

// An import and a restore set temp_store on the write connection for
// their transaction only, whether they succeed or fail.
func TestBulkTxSetsTempStoreBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(after string) {
		t.Helper()
		var v int
		if err := s.write.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&v); err != nil || v != 0 {
			t.Fatalf("after %s: temp_store %d, %v; want 0 (default)", after, v, err)
		}
	}
	if err := s.Restore(ctx, export.Read(strings.NewReader(`{"type":"member","name":"alice"}`+"\n"))); err != nil {
		t.Fatal(err)
	}
	check("a restore")
	doc := `{"OrderId":5,"certificate":{"common_name":"a.example","valid_till":"2030-01-01"},"status":"issued"}`
	if _, err := s.ImportOrders(ctx, "alice", importfile.Decode(strings.NewReader(doc))); err != nil {
		t.Fatal(err)
	}
	check("an import")
	if _, err := s.ImportOrders(ctx, "nobody", importfile.Decode(strings.NewReader(doc))); err == nil {
		t.Fatal("imported for a member who does not exist")
	}
	check("a failed import")
	if err := s.Restore(ctx, export.Read(strings.NewReader(`{"type":"member","name":"bob"}`+"\n"))); err == nil {
		t.Fatal("restored into a store that is not empty")
	}
	check("a failed restore")
}
