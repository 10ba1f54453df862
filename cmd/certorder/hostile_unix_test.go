//go:build linux

package main

import (
	"os"
	"syscall"
	"testing"

	"github.com/certorder/certorder/internal/testdb"
)

// shmDMS is the byte of SQLite's -shm file on which every process with
// the database open holds a read lock (UNIX_SHM_DMS in os_unix.c): the
// "dead man switch" by which a process opening the database learns that
// it is not alone, and must not reset the shared memory.
const shmDMS = 128

// serve on SQLite with its cache (the default) keeps its lock on the
// -shm file. Before the fix the cache opened the file to map it and
// closed that descriptor, which drops every POSIX lock the process holds
// on the file: the next admin command then reset the -shm file under
// serve's mappings, and OrderInfo answered 503 "disk I/O error"
// (SQLITE_IOERR_IN_PAGE): 2 of 27,444 requests in 14 s with 12 admin
// commands at a time (docs/OPERATIONS.md).
func TestSQLiteSharedMemoryLockKept(t *testing.T) {
	t.Parallel()
	db := testdb.SQLite(t)
	c := newStoreCLI(t, db)
	c.ok("admin", "member", "add", "alice")
	p := startProcess(t, buildBinary(t), "serve", "--addr", "127.0.0.1:0", "--db", db, "--webhooks=false")
	f, err := os.OpenFile(db+"-shm", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: shmDMS, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		t.Fatal(err)
	}
	if lk.Type != syscall.F_RDLCK || int(lk.Pid) != p.cmd.Process.Pid {
		t.Fatalf("the -shm file's DMS byte: lock type %d held by pid %d; want a read lock by serve (pid %d)",
			lk.Type, lk.Pid, p.cmd.Process.Pid)
	}
	c.ok("admin", "member", "add", "bob") // another process opens and closes the database meanwhile
	lk = syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: shmDMS, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil || lk.Type != syscall.F_RDLCK {
		t.Fatalf("after an admin command: lock type %d, %v", lk.Type, err)
	}
}
