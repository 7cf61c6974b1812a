package trainer

import (
	"time"

	"lcttop/trainer/internal/par"
)

// earlyEncode is an activation of the LCT run being encoded while the ops
// that read it run: the forward pass starts it as soon as the values are
// final; the next early encode, any other encode, or its commit settles
// it. At most one is in flight; it codes on
// the codec workers' Encoders while the store's own work on the same
// workers is decoding, so no codec state is added (any other encode first
// waits for it).
type earlyEncode struct {
	s        *slot
	vals     []uint16
	errs     []error
	reserved int64         // charged while in flight: the values' dense size, the most a chunk is stored in
	elapsed  time.Duration // wall time of the encode, set before done closes
	done     chan struct{}
}

// encodeEarly starts encoding activation s from vals (which must not
// change until s is committed) and charges its dense size to s's category
// until then, so the ledger never counts less than is held. Only the LCT
// run in training encodes early; otherwise commit does the work.
func (st *store) encodeEarly(s *slot, vals []uint16, train bool) {
	if !st.compress || !train {
		return
	}
	st.settleEarly()
	st.makeChunks(s)
	st.growWorkers()
	e := &earlyEncode{s: s, vals: vals, errs: make([]error, s.chunkCount()), reserved: 2 * int64(s.n), done: make(chan struct{})}
	st.fail(st.alloc.Alloc(s.cat, e.reserved))
	workers := st.workers
	// The helpers of parallel loops give up their core while it runs.
	yielded := par.Yield()
	go func() {
		defer yielded()
		start := time.Now()
		par.Each(len(e.errs), func(w, i int) {
			lo, hi := s.chunkRange(i)
			e.errs[i] = st.attempt(workers[w], s, i, vals[lo:hi])
		})
		e.elapsed = time.Since(start)
		close(e.done)
	}()
	st.early = e
}

// settleEarly waits for the encode in flight, if any, and settles its
// chunks in order (memory, pool, stats), exactly as encodeAll would have.
func (st *store) settleEarly() {
	e := st.early
	if e == nil {
		return
	}
	<-e.done
	st.early = nil
	st.clock.encode += e.elapsed
	st.clock.encodeBytes += 2 * int64(e.s.n)
	st.alloc.Free(e.s.cat, e.reserved)
	for i := range e.errs {
		lo, hi := e.s.chunkRange(i)
		st.accept(e.s, i, e.vals[lo:hi], e.errs[i])
	}
	e.s.stats = st.tensorStats(e.s)
	e.s.settled = true
}

// earlyFor reports whether the encode in flight is activation s's.
func (st *store) earlyFor(s *slot) bool { return st.early != nil && st.early.s == s }
