package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/sqlite"
	"github.com/certorder/certorder/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) certorder.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "test.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(ctx, path) // migrations already applied: must not run again
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := s.Members(ctx)
	if err != nil || len(ms) != 1 {
		t.Fatalf("Members = %v, %v", ms, err)
	}
}

func TestBadPath(t *testing.T) {
	for _, p := range []string{"", "a?b", filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")} {
		if s, err := sqlite.Open(context.Background(), p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}
