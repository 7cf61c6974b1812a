package codec

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// blockRunner is work split into independent blocks; worker w (0..workers−1)
// owns its scratch, so runBlock calls with distinct w may run concurrently.
type blockRunner interface {
	runBlock(worker, block int)
}

// blockJob is one helper's share of a parallel run: it takes blocks from next
// until none are left. Jobs travel by value, so dispatching them allocates nothing.
type blockJob struct {
	run    blockRunner
	worker int
	blocks int
	next   *atomic.Int64
	done   *sync.WaitGroup
}

func (j blockJob) do() {
	for {
		b := int(j.next.Add(1) - 1)
		if b >= j.blocks {
			break
		}
		j.run.runBlock(j.worker, b)
	}
	j.done.Done()
}

// The helper pool lives as long as the process, like the runtime's own
// workers: starting goroutines per call would allocate on every encode.
var (
	poolMu      sync.Mutex
	poolStarted int
	poolJobs    = make(chan blockJob, 1024)
)

func ensureHelpers(n int) {
	poolMu.Lock()
	defer poolMu.Unlock()
	for ; poolStarted < n; poolStarted++ {
		go helperLoop()
	}
}

func helperLoop() {
	for j := range poolJobs {
		j.do()
	}
}

// maxWorkers bounds Workers so that a silly setting cannot start thousands of goroutines.
const maxWorkers = 256

// workerCount resolves a Workers setting for a run of nblocks blocks.
func workerCount(setting, nblocks int) int {
	w := setting
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return max(1, min(w, nblocks, maxWorkers))
}

// parallelState is the per-run synchronisation an Encoder or Decoder keeps so
// that runs allocate nothing.
type parallelState struct {
	next atomic.Int64
	done sync.WaitGroup
}

// runBlocks runs r over blocks 0..nblocks−1 with the given number of workers;
// the caller is worker 0, so a single worker runs inline.
func (ps *parallelState) runBlocks(r blockRunner, workers, nblocks int) {
	if workers <= 1 {
		for b := range nblocks {
			r.runBlock(0, b)
		}
		return
	}
	ensureHelpers(workers - 1)
	ps.next.Store(0)
	ps.done.Add(workers)
	for w := 1; w < workers; w++ {
		poolJobs <- blockJob{run: r, worker: w, blocks: nblocks, next: &ps.next, done: &ps.done}
	}
	blockJob{run: r, worker: 0, blocks: nblocks, next: &ps.next, done: &ps.done}.do()
	ps.done.Wait()
}
