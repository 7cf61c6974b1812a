// Package par runs loops over independent items on several goroutines.
//
// Every caller in the trainer gives each output element to exactly one item
// and accumulates inside an item in a fixed order, so results are identical
// for any worker count and any scheduling: the split only decides who
// computes what, never the order of a sum.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

var workers atomic.Int32

// Workers is the number of goroutines For uses (GOMAXPROCS unless set).
func Workers() int {
	if w := workers.Load(); w > 0 {
		return int(w)
	}
	return runtime.GOMAXPROCS(0)
}

// SetWorkers fixes the worker count (0 restores GOMAXPROCS) and returns the
// previous setting; tests use it to show results do not depend on it.
func SetWorkers(n int) int { return int(workers.Swap(int32(n))) }

// piecesPerWorker is how many ranges For cuts per goroutine: goroutines
// take ranges as they finish, so one that shares its core with other work
// (the LCT run's codec) takes fewer.
const piecesPerWorker = 4

// For calls fn(lo, hi) over consecutive ranges covering 0..n-1, on up to
// Workers() goroutines, and returns when all are done. grain is the smallest
// range worth a goroutine.
func For(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	w := min(Workers(), max(1, n/grain))
	if w <= 1 {
		fn(0, n)
		return
	}
	pieces := min(piecesPerWorker*w, max(1, n/grain))
	var next atomic.Int64
	work := func() {
		for {
			p := int(next.Add(1) - 1)
			if p >= pieces {
				return
			}
			fn(p*n/pieces, (p+1)*n/pieces)
		}
	}
	var wg sync.WaitGroup
	wg.Add(w - 1)
	for range w - 1 {
		spawn(func() { work(); wg.Done() })
	}
	work()
	wg.Wait()
}

// Each calls fn(worker, i) for every i in 0..n-1 on up to Workers()
// goroutines; worker (0 ≤ worker < Workers()) identifies the goroutine, so
// callers can give each its own scratch. Goroutines take the next item as
// they finish one.
func Each(n int, fn func(worker, i int)) {
	w := min(Workers(), n)
	if w <= 1 {
		for i := range n {
			fn(0, i)
		}
		return
	}
	var next atomic.Int64
	work := func(k int) {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(k, i)
		}
	}
	var wg sync.WaitGroup
	wg.Add(w - 1)
	for k := 1; k < w; k++ {
		spawn(func() { work(k); wg.Done() })
	}
	work(0)
	wg.Wait()
}
