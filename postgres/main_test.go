package postgres_test

import (
	"os"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
)

func TestMain(m *testing.M) {
	testdb.WaitBoundParallel() // these tests wait on PostgreSQL, whose CPU is not this process's
	os.Exit(m.Run())
}
