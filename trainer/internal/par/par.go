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

// For calls fn(lo, hi) over consecutive ranges covering 0..n-1, on up to
// Workers() goroutines, and returns when all are done. grain is the smallest
// range worth a goroutine.
func For(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	w := min(Workers(), max(1, n/max(grain, 1)))
	if w <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < w; i++ {
		lo, hi := i*n/w, (i+1)*n/w
		wg.Go(func() { fn(lo, hi) })
	}
	fn(0, n/w)
	wg.Wait()
}

// Each calls fn(worker, i) for every i in 0..n-1 on up to Workers()
// goroutines; worker (0 ≤ worker < Workers()) identifies the goroutine, so
// callers can give each its own scratch. Worker w takes the consecutive
// items w·n/W .. (w+1)·n/W − 1.
func Each(n int, fn func(worker, i int)) {
	w := min(Workers(), n)
	if w <= 1 {
		for i := range n {
			fn(0, i)
		}
		return
	}
	var wg sync.WaitGroup
	for k := range w {
		lo, hi := k*n/w, (k+1)*n/w
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				fn(k, i)
			}
		})
	}
	wg.Wait()
}
