package sqlite

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"unsafe"
)

// walIndex tells, without a statement, whether any connection of any
// process has committed to the database since it last looked: it reads the
// WAL-index header at the start of the database's -shm file the way
// SQLite's own readers do (sqlite.org, "WAL-mode file format", and
// walIndexTryHdr in sqlite3.c): lock-free, from a shared mapping of the
// file, the header's two copies read in the order opposite to the one the
// writer writes them in, accepted only when they agree and the header's
// checksum holds. Every commit writes a new header (its frame count grows,
// or, when the WAL restarts, its salts change), so a header seen twice
// means nothing was committed in between.
//
// The mapping stays valid as long as the store's pinned connection keeps
// the database open (see Open): SQLite deletes or truncates the -shm file
// only when its last connection closes.
type walIndex struct {
	mem   []byte // the -shm file's first page, mapped shared and read-only
	unmap func() error
	state atomic.Pointer[walState]
}

// walState maps the header last seen to a generation of the cache.
type walState struct {
	hdr [walHeaderWords]uint32
	gen uint64
}

// The WAL-index header: 48 bytes, twice, at the start of the -shm file.
const (
	walHeaderWords = 12
	walHeaderBytes = 4 * walHeaderWords
	walIsInitByte  = 12 // isInit: non-zero once the header is written
	walCksumWord   = 10 // aCksum[2]: the checksum of the 40 bytes before it
)

var errNoWALIndex = errors.New("no WAL index to read")

// openWALIndex maps the -shm file of the database at path. The database
// must be open in WAL mode, its WAL index initialised.
func openWALIndex(path string) (*walIndex, error) {
	mem, unmap, err := mapShared(path+"-shm", 4096)
	if err != nil {
		return nil, fmt.Errorf("sqlite: WAL index: %w", err)
	}
	w := &walIndex{mem: mem, unmap: unmap}
	w.state.Store(&walState{})
	if _, ok := w.header(); !ok {
		unmap()
		return nil, fmt.Errorf("sqlite: WAL index: %w", errNoWALIndex)
	}
	return w, nil
}

// close unmaps the file.
func (w *walIndex) close() error { return w.unmap() }

// generation returns a number that changes whenever a transaction has
// committed to the database since the last call that returned another, or
// false when the header cannot be read consistently now (a commit is
// writing it): then the cache must not be used.
func (w *walIndex) generation() (uint64, bool) {
	h, ok := w.header()
	if !ok {
		return 0, false
	}
	for {
		st := w.state.Load()
		if st.hdr == h {
			return st.gen, true
		}
		// A reader with an older header may install it after a newer one:
		// its generation is still one header's alone, so nothing stale is
		// ever found under it; it costs a miss, no more.
		next := &walState{hdr: h, gen: st.gen + 1}
		if w.state.CompareAndSwap(st, next) {
			return next.gen, true
		}
	}
}

// header reads the header as walIndexTryHdr does: copy 0, then copy 1
// (the writer writes 1, then 0), each word an atomic load; the copies must
// agree, the header be initialised and its checksum hold.
func (w *walIndex) header() (h [walHeaderWords]uint32, ok bool) {
	// The file is never truncated while the store's connections hold it
	// (see walIndex), but should it be, a read past its end is a fault:
	// make that a panic recovered here, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	base := unsafe.Pointer(unsafe.SliceData(w.mem))
	var h1 [walHeaderWords]uint32
	for i := range walHeaderWords {
		h[i] = atomic.LoadUint32((*uint32)(unsafe.Add(base, 4*i)))
	}
	for i := range walHeaderWords {
		h1[i] = atomic.LoadUint32((*uint32)(unsafe.Add(base, walHeaderBytes+4*i)))
	}
	if h != h1 || (*[walHeaderBytes]byte)(unsafe.Pointer(&h))[walIsInitByte] == 0 {
		return h, false
	}
	// SQLite's checksum in native byte order over the first 40 bytes.
	var s1, s2 uint32
	for i := 0; i < walCksumWord; i += 2 {
		s1 += h[i] + s2
		s2 += h[i+1] + s1
	}
	return h, s1 == h[walCksumWord] && s2 == h[walCksumWord+1]
}
