package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/poll"
	"github.com/certorder/certorder/sqlite"
	"github.com/certorder/certorder/storetest"
)

// A backup taken while two stores on the file keep writing holds every
// import committed before it began, and each import whole or not at all;
// it opens as a store, with its audit trail.
func TestBackupWhileWriting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	serving, err := sqlite.Open(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	defer serving.Close()
	other, err := sqlite.Open(ctx, live) // as another process (an admin command) would
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := serving.AddMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}

	// Each writer imports batches of five orders, batch b holding orders
	// 10b+1 .. 10b+5, and logs one audit entry per batch.
	const perBatch = 5
	var mu sync.Mutex
	var committed []int64 // batches whose import has returned
	stop := make(chan struct{})
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for w, store := range []*sqlite.Store{serving, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); i < 2000 && time.Now().Before(deadline); i++ {
				select {
				case <-stop:
					return
				default:
				}
				b := i*2 + int64(w) + 1
				docs := make([]string, perBatch)
				for j := range docs {
					docs[j] = storetest.OrderJSON(b*10+int64(j)+1, 0, "2030-01-01")
				}
				if _, err := store.ImportOrders(ctx, "alice", storetest.Orders(t, docs...)); err != nil {
					t.Errorf("import batch %d: %v", b, err)
					return
				}
				if err := store.AppendAudit(ctx, []certorder.AuditEntry{{Time: time.Now(), Member: "alice", Action: "OrderInfo", OrderID: b}}); err != nil {
					t.Errorf("audit batch %d: %v", b, err)
					return
				}
				mu.Lock()
				committed = append(committed, b)
				mu.Unlock()
			}
		}()
	}
	waitFor := func(n int) {
		poll.Until(t, time.Until(deadline), fmt.Sprintf("%d batches written", n), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(committed) >= n
		})
	}
	waitFor(20)
	mu.Lock()
	before := append([]int64(nil), committed...)
	mu.Unlock()
	backup := filepath.Join(dir, "backup.db")
	err = serving.Backup(ctx, backup, true)
	waitFor(len(before) + 10) // the writers went on beside the backup
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}

	copied, err := sqlite.Open(ctx, backup)
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close()
	alice, err := copied.FindMember(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	orders, err := copied.ListOrders(ctx, certorder.OrderQuery{MemberID: alice.ID})
	if err != nil {
		t.Fatal(err)
	}
	perB := map[int64]int{}
	for _, o := range orders {
		perB[o.ID/10]++
	}
	for _, b := range before {
		if perB[b] != perBatch {
			t.Errorf("batch %d, committed before the backup, has %d orders in it", b, perB[b])
		}
	}
	for b, n := range perB {
		if n != perBatch {
			t.Errorf("batch %d is in the backup in part: %d of %d orders", b, n, perBatch)
		}
	}
	audit, err := copied.Audit(ctx, certorder.AuditQuery{Limit: 0})
	if err != nil {
		t.Fatal(err)
	}
	inAudit := map[int64]bool{}
	for _, a := range audit {
		inAudit[a.OrderID] = true
	}
	for _, b := range before {
		if !inAudit[b] {
			t.Errorf("the audit entry of batch %d is not in the backup", b)
		}
	}
	mu.Lock()
	t.Logf("%d batches before the backup, %d in it, %d written in all", len(before), len(perB), len(committed))
	mu.Unlock()

	// No second backup over the first; no temporary files left behind.
	if err := serving.Backup(ctx, backup, false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("backup over an existing file: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// Without the audit trail, the backup has none beside it.
func TestBackupWithoutAudit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "live.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AddMember(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "b.db")
	if err := s.Backup(ctx, dst, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sqlite.AuditPath(dst)); err == nil {
		t.Fatal("an audit file was written without withAudit")
	}
	if err := s.Backup(ctx, filepath.Join(dir, "no", "such", "dir.db"), false); err == nil {
		t.Fatal("backup into a missing directory succeeded")
	}
}
