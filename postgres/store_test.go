package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/testdb"
	"github.com/certorder/certorder/postgres"
	"github.com/certorder/certorder/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) certorder.Store {
		s, err := postgres.Open(context.Background(), testdb.Postgres(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Several instances starting at once on an empty database: the advisory
// lock lets one migrate and the others find the schema done.
func TestConcurrentMigrations(t *testing.T) {
	dsn := testdb.Postgres(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(context.Background(), dsn)
			if err == nil {
				_, err = s.Members(context.Background())
				s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestBadDSN(t *testing.T) {
	if _, err := postgres.Open(context.Background(), "postgres://u:secretpw@127.0.0.1:1/x?connect_timeout=1"); err == nil {
		t.Fatal("opened a database nobody serves")
	} else if want := "secretpw"; strings.Contains(err.Error(), want) {
		t.Fatalf("error shows the password: %v", err)
	}
}

// Audit rows written before segments are still read and pruned.
func TestLegacyAudit(t *testing.T) {
	dsn := testdb.Postgres(t)
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	storetest.LegacyAudit(t, s, func(e certorder.AuditEntry) error {
		_, err := conn.Exec(context.Background(), `INSERT INTO audit_log (at, member, key_id, action, order_id, outcome, client_ip, count)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, e.Time, e.Member, e.KeyID, e.Action, e.OrderID, e.Outcome, e.ClientIP, e.Count)
		return err
	})
}
