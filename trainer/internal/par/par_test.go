package par

import (
	"sync/atomic"
	"testing"
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
	owner := make([]int, 10)
	Each(10, func(w, i int) {
		seen[i].Add(1)
		owner[i] = w
		if w < 0 || w >= 3 {
			t.Errorf("worker %d out of range", w)
		}
	})
	for i := range seen {
		if seen[i].Load() != 1 {
			t.Fatalf("item %d visited %d times", i, seen[i].Load())
		}
		if i > 0 && owner[i] < owner[i-1] {
			t.Fatalf("items are not split into consecutive runs: %v", owner)
		}
	}
}
