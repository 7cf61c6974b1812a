package par

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestForCoversEachIndexOnce(t *testing.T) {
	for _, w := range []int{1, 2, 3, 7} {
		old := SetWorkers(w)
		for _, n := range []int{0, 1, 5, 64, 1000} {
			hits := make([]atomic.Int32, n)
			For(n, 1, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					hits[i].Add(1)
				}
			})
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("workers %d, n %d: index %d visited %d times", w, n, i, h)
				}
			}
		}
		SetWorkers(old)
	}
}

func TestEachGivesDistinctWorkers(t *testing.T) {
	old := SetWorkers(3)
	defer SetWorkers(old)
	seen := make([]atomic.Int32, 10)
	Each(10, func(w, i int) {
		seen[i].Add(1)
		if w < 0 || w >= 3 {
			t.Errorf("worker %d out of range", w)
		}
	})
	for i := range seen {
		if seen[i].Load() != 1 {
			t.Fatalf("item %d visited %d times", i, seen[i].Load())
		}
	}
}

// Loops started side by side share the helpers; each still covers its
// items once.
func TestLoopsSideBySide(t *testing.T) {
	old := SetWorkers(3)
	defer SetWorkers(old)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for r := range 200 {
				n := 1 + (g*7+r)%50
				hits := make([]atomic.Int32, n)
				if r%2 == 0 {
					For(n, 1, func(lo, hi int) {
						for i := lo; i < hi; i++ {
							hits[i].Add(1)
						}
					})
				} else {
					Each(n, func(_, i int) { hits[i].Add(1) })
				}
				for i := range hits {
					if h := hits[i].Load(); h != 1 {
						t.Errorf("loop %d/%d: index %d visited %d times", g, r, i, h)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// Loops a helper's wait apart, so that work reaches helpers as they fall
// asleep as well as awake and asleep.
func TestLoopsAcrossHelperSleep(t *testing.T) {
	old := SetWorkers(2)
	defer SetWorkers(old)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for r := range 300 {
				time.Sleep(time.Duration((r+g)%7) * spinFor / 3)
				var hits [2]atomic.Int32
				Each(2, func(_, i int) { hits[i].Add(1) })
				if hits[0].Load() != 1 || hits[1].Load() != 1 {
					t.Errorf("loop %d/%d: items visited %d and %d times", g, r, hits[0].Load(), hits[1].Load())
					return
				}
			}
		})
	}
	wg.Wait()
}
