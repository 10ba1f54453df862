package digicert_test

import (
	"os"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
)

func TestMain(m *testing.M) {
	testdb.WaitBoundParallel() // these tests wait on servers, timers and retries more than on the CPU
	os.Exit(m.Run())
}
