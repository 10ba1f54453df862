package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/stores"
)

// A recipient who refused certorder's messages (the block link of a
// confirmation) is refused by admin notice add too, saying so and how to
// lift it; admin notice unblock lifts it, once.
func TestNoticeAddBlocked(t *testing.T) {
	t.Parallel()
	dsn := testdb.SQLite(t)
	c := newStoreCLI(t, dsn)
	c.ok("admin", "member", "add", "acme")
	s, err := stores.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	err = s.BlockNoticeRecipient(context.Background(), "ops@acme.example", time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	msg := c.fails(1, "admin", "notice", "add", "acme", "Ops+certorder@Acme.Example")
	for _, want := range []string{"ops+certorder@acme.example: the owner of ops@acme.example refused certorder's messages on 2026-11-27",
		"certorder admin notice unblock ops+certorder@acme.example"} {
		if !strings.Contains(msg, want) {
			t.Errorf("a blocked address: %s\nwant %q", msg, want)
		}
	}
	if out := c.ok("admin", "notice", "unblock", "ops+certorder@acme.example"); !strings.Contains(out, "ops@acme.example unblocked") {
		t.Errorf("unblock: %s", out)
	}
	if msg := c.fails(1, "admin", "notice", "unblock", "ops@acme.example"); !strings.Contains(msg, "ops@acme.example is not blocked") {
		t.Errorf("unblock twice: %s", msg)
	}
	c.fails(exitUsage, "admin", "notice", "unblock", "not-an-address")
	c.ok("admin", "notice", "add", "acme", "ops@acme.example")
}
