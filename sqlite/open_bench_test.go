package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkOpen opens a new store (every migration applied) and an
// existing one, as every CLI command and every test's store does.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	b.Run("new", func(b *testing.B) {
		dir, i := b.TempDir(), 0
		for b.Loop() {
			i++
			s, err := Open(ctx, filepath.Join(dir, fmt.Sprintf("new%d.db", i)))
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	b.Run("existing", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "existing.db")
		s, err := Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		for b.Loop() {
			s, err := Open(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
}
