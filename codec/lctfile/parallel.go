package lctfile

import (
	"runtime"
	"sort"
	"sync"
)

// workerCount is how many goroutines share n jobs: one per core, no more
// than there are jobs.
func workerCount(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n))
}

// runJobs calls do(worker, job) for each job, largest first so that the
// cores finish together, and returns the error of the lowest-numbered job
// that failed (so the message does not depend on scheduling).
func runJobs(jobs []int, size func(job int) int64, workers int, do func(worker, job int) error) error {
	order := append([]int(nil), jobs...)
	sort.SliceStable(order, func(i, j int) bool { return size(order[i]) > size(order[j]) })
	errs := make(map[int]error)
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range next {
				if err := do(w, job); err != nil {
					mu.Lock()
					errs[job] = err
					mu.Unlock()
				}
			}
		}()
	}
	for _, job := range order {
		next <- job
	}
	close(next)
	wg.Wait()
	first := -1
	for job := range errs {
		if first < 0 || job < first {
			first = job
		}
	}
	if first >= 0 {
		return errs[first]
	}
	return nil
}
