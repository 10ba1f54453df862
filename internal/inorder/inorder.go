// Package inorder runs work on a few goroutines and hands the results on in
// the order their inputs came: the import file and the export reader share
// it. Standard library only.
package inorder

import (
	"runtime"
	"sync"
)

// queued is how many results a worker holds ahead of consume, and inputs
// ahead of it. Importing 200,000 loadbench orders on 2 cores (the writer
// and two parsing workers): with 64, the parsing stopped while the import
// wrote a batch, and the writer then waited for most of the next one.
// /usr/bin/time, medians of three alternated runs: 11.14 s with 64, 9.76 s
// with 512 (on a store of 16 KiB pages, tried: 8.98 s with 64, 256 8.33
// s, 512 6.98 s, 1,024 no faster again at 8 MB more). Each queued order
// is some 4 KiB: 512 a worker held 8 MB more at the peak (124 MB of RSS
// against 116 MB). Issue 44, docs/PERFORMANCE.md.
const queued = 512

// Run runs work on what produce emits, on a few goroutines (as many as
// there are CPUs, up to 4), and hands the results to consume in the order
// produce emitted them, until consume returns false or all are consumed.
// produce runs in a goroutine of its own and stops when emit returns
// false. The reading of an import file and of an export share it: parsing
// and checking each document is most of their work.
//
// Each worker queues up to queued results ahead of consume, so that a
// consumer that stops to write a batch (the import's 1,000 orders) finds
// the next batch done when it comes back, instead of waiting for it.
func Run[In, Out any](produce func(emit func(In) bool), work func(In) Out, consume func(Out) bool) {
	workers := min(4, max(1, runtime.GOMAXPROCS(0)))
	in, out := make([]chan In, workers), make([]chan Out, workers)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		in[w], out[w] = make(chan In, queued), make(chan Out, queued)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(out[w])
			for it := range in[w] {
				select {
				case out[w] <- work(it):
				case <-done:
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the producer deals the items to the workers in turn
		defer wg.Done()
		defer func() {
			for _, ch := range in {
				close(ch)
			}
		}()
		n := 0
		produce(func(it In) bool {
			select {
			case in[n%workers] <- it:
				n++
				return true
			case <-done:
				return false
			}
		})
	}()
	defer func() {
		close(done)
		for _, ch := range out { // let the workers and the producer finish
			for range ch {
			}
		}
		wg.Wait()
	}()
	for n := 0; ; n++ {
		r, ok := <-out[n%workers]
		if !ok || !consume(r) {
			return
		}
	}
}
