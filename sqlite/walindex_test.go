package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// The WAL-index header changes with every commit, from this store or
// another, and reads the same while nothing is committed.
func TestWALIndexGeneration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "test.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	w, err := openWALIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	g1, ok := w.generation()
	if !ok {
		t.Fatal("header not readable")
	}
	if g, _ := w.generation(); g != g1 {
		t.Fatalf("generation moved without a commit: %d, %d", g1, g)
	}
	if _, err := s.Members(ctx); err != nil { // a read commits nothing
		t.Fatal(err)
	}
	if g, _ := w.generation(); g != g1 {
		t.Fatal("a read moved the generation")
	}
	if _, err := other.AddMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	g2, ok := w.generation()
	if !ok || g2 == g1 {
		t.Fatalf("a commit did not move the generation: %d, %d", g1, g2)
	}
	if _, err := s.AddMember(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if g3, _ := w.generation(); g3 == g2 {
		t.Fatal("a second commit did not move the generation")
	}
}

// BenchmarkWALIndexGeneration is the cost of the check every request makes.
func BenchmarkWALIndexGeneration(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w, err := openWALIndex(path)
	if err != nil {
		b.Fatal(err)
	}
	defer w.close()
	for b.Loop() {
		w.generation()
	}
}
