package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/certorder/certorder/internal/export"
	"github.com/certorder/certorder/internal/importfile"
)

// An import and a restore change the write connection's settings
// (bulkPragmas) for their transaction only, whether they succeed or fail.
func TestBulkTxSetsPragmasBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	settings := func() []string {
		t.Helper()
		var values []string
		for _, p := range bulkPragmas {
			var v string
			if err := s.write.QueryRowContext(ctx, `PRAGMA `+p.name).Scan(&v); err != nil {
				t.Fatal(err)
			}
			values = append(values, p.name+"="+v)
		}
		return values
	}
	want := settings()
	if !slices.Equal(want, []string{"temp_store=0", "mmap_size=268435456", "cache_size=-2000"}) {
		t.Fatalf("the write connection starts with %q", want)
	}
	check := func(after string) {
		t.Helper()
		if got := settings(); !slices.Equal(got, want) {
			t.Fatalf("after %s: %q, want %q", after, got, want)
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
