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
