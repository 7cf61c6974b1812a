package trainer

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/trainer/internal/par"
)

// chunkElems is how many elements the LCT run encodes as one codec tensor. A
// stored tensor is a run of such chunks, so the fused optimizer update needs
// one chunk of scratch per state, not a whole tensor, and chunks of a tensor
// are encoded and decoded in parallel. It is half a CLEAN block (a whole
// MEDIUM/HIGH block): a partial block keeps CLEAN's bits per exponent
// (format.md §3), and each chunk costs its header: 32 bytes with a
// parametric codebook (derived from the header's fields), 34–160 with an
// empirical one (its coded range), at most 0.35% of the chunk's size.
const chunkElems = 32768

// slot is one stored tensor of a run: a parameter, an optimizer state, or an
// activation saved for the backward pass.
type slot struct {
	name  string
	class session.TensorClass
	cat   session.Category
	n     int

	dense   []uint16 // dense run: the values (nil while an activation is not held)
	chunks  []chunk  // LCT run: nil while an activation is not held
	stats   session.TensorStats
	plans   []chunkPlan // LCT run: how each chunk was last coded, kept across encodes (plan.go)
	stagger int         // spreads the slots' full fits over steps (plan.go)
	// settled: the LCT run encoded this activation early and settled it
	// before its commit, which then only frees the dense buffer.
	settled bool
}

func (s *slot) chunkCount() int { return (s.n + chunkElems - 1) / chunkElems }

func (s *slot) chunkRange(i int) (lo, hi int) {
	lo = i * chunkElems
	return lo, min(lo+chunkElems, s.n)
}

// chunk is one codec tensor of an LCT slot, or its values kept as they are:
// when encoding would not make it smaller (tiny tensors), or when its
// overflow did not fit the pool (a fallback, until it is next written).
type chunk struct {
	enc      *codec.Tensor // nil when raw
	raw      []uint16
	fallback bool
	stats    codec.Stats // of the last encoding attempt
	charged  int64       // bytes charged to the slot's category
	pooled   int64       // overflow bytes held in the pool
}

// codecWorker is one goroutine's codec state. A chunk is at most one block,
// which the codec encodes and decodes on its caller's goroutine, so
// parallelism comes from running chunks side by side.
type codecWorker struct {
	enc   codec.Encoder
	dec   codec.Decoder
	spare *codec.Tensor // a chunk planned raw handed its tensor back for the next
}

// codecClock is the codec's share of one step: wall time of the sections
// that only encode or decode, and the BF16 bytes they went through.
type codecClock struct {
	encode, decode           time.Duration
	encodeBytes, decodeBytes int64
}

// store keeps one run's tensors: as they are (the shadow) or compressed
// (LCT). Both runs call the same methods in the same order; only the
// representation, and so the memory, differs. Errors (an allocation over
// budget, a decode failure) are sticky: the first is kept in err and the
// step reports it at its end.
type store struct {
	compress bool
	alloc    Allocator
	classes  map[session.TensorClass]session.ClassCodec
	tensors  map[string]session.ClassCodec // per-tensor overrides of classes
	pool     *overflowPool
	workers  []*codecWorker
	clock    codecClock
	early    *earlyEncode // an activation encoding while ops run (early.go)

	slotsPlanned int // slots given plans so far (makeChunks)

	errMu sync.Mutex
	err   error
}

func newStore(compress bool, alloc Allocator, classes map[session.TensorClass]session.ClassCodec, poolBudget int64) (*store, error) {
	st := &store{compress: compress, alloc: alloc, classes: classes, tensors: map[string]session.ClassCodec{}}
	if !compress {
		return st, nil
	}
	st.pool = &overflowPool{budget: poolBudget}
	if err := alloc.Alloc(session.OverflowPool, poolBudget); err != nil {
		return nil, err
	}
	st.growWorkers()
	return st, st.takeErr()
}

// codecOf is the setting slot s is encoded with: its own override, else
// its class's.
func (st *store) codecOf(s *slot) session.ClassCodec {
	if cc, ok := st.tensors[s.name]; ok {
		return cc
	}
	return st.classes[s.class]
}

// codecWorkerScratch bounds what one codecWorker's Encoder and Decoder
// allocate for their own state (per-stream bit buffers, code and lookup
// tables of format version 3's largest alphabet, counters) on single-block
// tensors; a test measures it.
const codecWorkerScratch = 40 << 10

// fail records the first error; codec goroutines call it concurrently.
func (st *store) fail(err error) {
	if err == nil {
		return
	}
	st.errMu.Lock()
	defer st.errMu.Unlock()
	if st.err == nil {
		st.err = err
	}
}

// takeErr returns and clears the sticky error.
func (st *store) takeErr() error {
	st.errMu.Lock()
	defer st.errMu.Unlock()
	err := st.err
	st.err = nil
	return err
}

// growWorkers gives every goroutine par may use a codec worker, charging
// its scratch.
func (st *store) growWorkers() {
	for len(st.workers) < par.Workers() {
		st.workers = append(st.workers, new(codecWorker))
		st.fail(st.alloc.Alloc(session.CodecScratch, codecWorkerScratch))
	}
}

// each runs fn over n items with a codec worker per goroutine.
func (st *store) each(n int, fn func(w *codecWorker, i int)) {
	st.growWorkers()
	par.Each(n, func(w, i int) { fn(st.workers[w], i) })
}

// newBuf allocates n BF16 values charged to category c.
func (st *store) newBuf(c session.Category, n int) []uint16 {
	st.fail(st.alloc.Alloc(c, 2*int64(n)))
	return make([]uint16, n)
}

func (st *store) freeBuf(c session.Category, b []uint16) { st.alloc.Free(c, 2*int64(len(b))) }

// relabel moves buffer b's charge from category from to category to.
func (st *store) relabel(from, to session.Category, b []uint16) {
	st.alloc.Free(from, 2*int64(len(b)))
	st.fail(st.alloc.Alloc(to, 2*int64(len(b))))
}

// newF32 allocates n float32 values charged to category c.
func (st *store) newF32(c session.Category, n int) []float32 {
	st.fail(st.alloc.Alloc(c, 4*int64(n)))
	return make([]float32, n)
}

func (st *store) freeF32(c session.Category, b []float32) { st.alloc.Free(c, 4*int64(len(b))) }

// set stores vals (copied) as the content of s.
func (st *store) set(s *slot, vals []uint16) {
	if !st.compress {
		if s.dense == nil {
			s.dense = st.newBuf(s.cat, s.n)
		}
		copy(s.dense, vals)
		return
	}
	st.encodeAll(s, slices.Clone(vals))
}

// read returns s's values: the stored slice itself in the dense run (which
// the caller may overwrite when this is the values' last use), a decoded
// copy in codec scratch in the LCT run. Pair with done.
func (st *store) read(s *slot) []uint16 {
	if !st.compress {
		return s.dense
	}
	buf := st.newBuf(session.CodecScratch, s.n)
	st.decodeAll(s, buf)
	return buf
}

// done ends a read.
func (st *store) done(s *slot, view []uint16) {
	if st.compress {
		st.freeBuf(session.CodecScratch, view)
	}
}

// begin returns a buffer for the forward pass to compute activation s into.
func (st *store) begin(s *slot) []uint16 {
	buf := st.newBuf(s.cat, s.n)
	if !st.compress {
		s.dense = buf
	}
	return buf
}

// commit ends the forward pass's use of activation s: the LCT run encodes
// it (scrambling buf) and frees the buffer. When keep is false (evaluation)
// it is dropped.
func (st *store) commit(s *slot, buf []uint16, keep bool) {
	switch {
	case !keep:
		st.freeBuf(s.cat, buf)
		s.dense = nil
	case st.compress && (st.earlyFor(s) || s.settled):
		st.settleEarly()
		s.settled = false
		st.freeBuf(s.cat, buf)
	case st.compress:
		st.encodeAll(s, buf)
		st.freeBuf(s.cat, buf)
	}
}

// commitAndKeep commits activation s like commit and returns a buffer of
// the same values for the caller to overwrite (an element-wise op in place)
// and free with freeBuf. The dense run must keep its stored buffer intact,
// so it copies; the LCT run hands back the buffer it just encoded, so the
// values exist once dense and once compressed, not twice dense. When keep is false (evaluation) nothing is saved and buf itself
// is handed back.
func (st *store) commitAndKeep(s *slot, buf []uint16, keep bool) []uint16 {
	if !keep {
		s.dense = nil
		return buf
	}
	if !st.compress {
		out := st.newBuf(s.cat, s.n)
		copy(out, buf)
		return out
	}
	st.encodeAll(s, buf)
	return buf
}

// take returns activation s for its last use in the backward pass: the
// caller owns the values (it may overwrite them) until drop. The LCT run
// decodes into codec scratch and frees the compressed form at once, so the
// two are never held together.
func (st *store) take(s *slot) []uint16 {
	if !st.compress {
		return s.dense
	}
	buf := st.newBuf(session.CodecScratch, s.n)
	st.decodeAll(s, buf)
	for i := range s.chunks {
		st.uncharge(s, &s.chunks[i])
	}
	s.chunks = nil
	return buf
}

// drop frees what take returned.
func (st *store) drop(s *slot, vals []uint16) {
	if !st.compress {
		st.freeBuf(s.cat, s.dense)
		s.dense = nil
		return
	}
	st.freeBuf(session.CodecScratch, vals)
}

// update applies fn to the values of slots (a parameter and its optimizer
// states, all the same length) and the gradient g. The dense run calls fn
// once on whole tensors; the LCT run goes chunk by chunk: decode the chunk
// of every slot, fn, encode them back (the fused path), with one chunk of
// scratch per slot (per chunk of a group, updateGroup). fn is element-wise,
// so both give the same bits.
func (st *store) update(slots []*slot, g []uint16, fn func(vals [][]uint16, g []uint16)) {
	st.updateFrom(slots, nil, g, fn)
}

// updateFrom is update where the caller already holds slots[0]'s values in
// first (a view from read, which it frees with done after this): the LCT
// run updates them in place instead of decoding slots[0] again. first is
// scrambled by the encode.
func (st *store) updateFrom(slots []*slot, first []uint16, g []uint16, fn func(vals [][]uint16, g []uint16)) {
	if !st.compress {
		views := make([][]uint16, len(slots))
		for j, s := range slots {
			views[j] = s.dense
		}
		fn(views, g)
		return
	}
	n := slots[0].n
	m := min(chunkElems, n)
	skip := 0 // slots already decoded by the caller
	if first != nil {
		skip = 1
	}
	dec := len(slots) - skip
	group := st.updateGroup(slots, dec*m)
	scratch := st.newBuf(session.CodecScratch, group*dec*m)
	// views[q*k+j]: chunk c0+q of slot j.
	k := len(slots)
	views := make([][]uint16, group*k)
	nc := slots[0].chunkCount()
	for c0 := 0; c0 < nc; c0 += group {
		gc := min(group, nc-c0)
		elems := 0
		for q := range gc {
			lo, hi := slots[0].chunkRange(c0 + q)
			elems += hi - lo
			for j := range slots {
				if j < skip {
					views[q*k+j] = first[lo:hi]
				} else {
					at := (q*dec + j - skip) * m
					views[q*k+j] = scratch[at : at+hi-lo]
				}
			}
		}
		st.timed(&st.clock.decode, &st.clock.decodeBytes, 2*dec*elems, func() {
			st.each(gc*dec, func(w *codecWorker, x int) {
				q, j := x/dec, skip+x%dec
				st.fail(st.decodeChunk(w, slots[j], c0+q, views[q*k+j]))
			})
		})
		for q := range gc {
			lo, hi := slots[0].chunkRange(c0 + q)
			fn(views[q*k:(q+1)*k], g[lo:hi])
		}
		st.encodeChunks(slots, c0, gc, views)
	}
	for _, s := range slots {
		s.stats = st.tensorStats(s)
	}
	st.freeBuf(session.CodecScratch, scratch)
}

// updateGroup is how many chunks of slots an update takes at once, each
// with chunkScratch values of scratch: one per worker, so that the encodes
// of one chunk's slots (more than there are workers) share a loop with the
// next chunk's rather than leave a worker idle, where the extra scratch
// stays under the run's peak so far however the chunks re-encode (each
// chunk is charged at most its values' size); else one.
func (st *store) updateGroup(slots []*slot, chunkScratch int) int {
	group := min(par.Workers(), slots[0].chunkCount())
	if group <= 1 {
		return 1
	}
	var growth int64
	for _, s := range slots {
		for i := range s.chunks {
			lo, hi := s.chunkRange(i)
			growth += max(0, 2*int64(hi-lo)-s.chunks[i].charged)
		}
	}
	if !st.fitsUnderPeak(2*int64(group*chunkScratch) + growth) {
		return 1
	}
	return group
}

// fitsUnderPeak says whether extra more live bytes would stay within the
// run's peak so far (always in the dense run, which holds nothing extra).
func (st *store) fitsUnderPeak(extra int64) bool {
	if !st.compress {
		return true
	}
	m := st.alloc.Memory()
	return m.LiveTotal+extra <= m.PeakTotal
}

// forEachChunk calls fn with s's values piece by piece (the whole tensor in
// the dense run, chunk by chunk decoded into scratch in the LCT run).
func (st *store) forEachChunk(s *slot, fn func(lo int, vals []uint16)) {
	if !st.compress {
		fn(0, s.dense)
		return
	}
	buf := st.newBuf(session.CodecScratch, min(chunkElems, s.n))
	for i := range s.chunkCount() {
		lo, hi := s.chunkRange(i)
		st.fail(st.decodeChunk(st.workers[0], s, i, buf[:hi-lo]))
		fn(lo, buf[:hi-lo])
	}
	st.freeBuf(session.CodecScratch, buf)
}

// reencode encodes s again under its class's current setting.
func (st *store) reencode(s *slot) {
	if !st.compress || s.chunks == nil {
		return
	}
	buf := st.read(s)
	st.encodeAll(s, buf)
	st.done(s, buf)
}

// timed runs f and adds its wall time and bytes to a clock.
func (st *store) timed(d *time.Duration, bytes *int64, n int, f func()) {
	start := time.Now()
	f()
	*d += time.Since(start)
	*bytes += int64(n)
}

// decodeAll decodes every chunk of s into dst, chunks side by side.
func (st *store) decodeAll(s *slot, dst []uint16) {
	st.timed(&st.clock.decode, &st.clock.decodeBytes, 2*s.n, func() {
		st.each(s.chunkCount(), func(w *codecWorker, i int) {
			lo, hi := s.chunkRange(i)
			st.fail(st.decodeChunk(w, s, i, dst[lo:hi]))
		})
	})
}

func (st *store) decodeChunk(w *codecWorker, s *slot, i int, dst []uint16) error {
	c := &s.chunks[i]
	if c.enc == nil {
		copy(dst, c.raw)
	} else if err := w.dec.Decode(c.enc, dst); err != nil {
		return fmt.Errorf("decoding %s, chunk %d: %w", s.name, i, err)
	}
	return nil
}

// encodeAll encodes vals as the whole content of s, chunks side by side.
func (st *store) encodeAll(s *slot, vals []uint16) {
	st.settleEarly()
	st.makeChunks(s)
	nc := s.chunkCount()
	errs := make([]error, nc)
	st.timed(&st.clock.encode, &st.clock.encodeBytes, 2*s.n, func() {
		st.each(nc, func(w *codecWorker, i int) {
			lo, hi := s.chunkRange(i)
			errs[i] = st.attempt(w, s, i, vals[lo:hi])
		})
	})
	for i := range nc {
		lo, hi := s.chunkRange(i)
		st.accept(s, i, vals[lo:hi], errs[i])
	}
	s.stats = st.tensorStats(s)
}

// makeChunks gives s its chunks, and its plans when it has none yet.
func (st *store) makeChunks(s *slot) {
	if s.chunks == nil {
		s.chunks = make([]chunk, s.chunkCount())
	}
	if s.plans == nil {
		s.plans = make([]chunkPlan, s.chunkCount())
		s.stagger = st.slotsPlanned
		st.slotsPlanned++
	}
}

// encodeChunks encodes chunks c0..c0+gc-1 of each slot from vals (chunk
// c0+q of slot j from vals[q*len(slots)+j]) side by side, and settles them
// chunk by chunk, slot by slot, as one chunk at a time would.
func (st *store) encodeChunks(slots []*slot, c0, gc int, vals [][]uint16) {
	st.settleEarly()
	k := len(slots)
	errs := make([]error, gc*k)
	n := 0
	for _, v := range vals[:gc*k] {
		n += 2 * len(v)
	}
	st.timed(&st.clock.encode, &st.clock.encodeBytes, n, func() {
		st.each(gc*k, func(w *codecWorker, x int) { errs[x] = st.attempt(w, slots[x%k], c0+x/k, vals[x]) })
	})
	for x, err := range errs {
		st.accept(slots[x%k], c0+x/k, vals[x], err)
	}
}

// attempt encodes src as chunk i of s with its class's codebook family and
// preset, the codebook and layout chosen as plan.go says (format.md §2–4,
// §7). A chunk planned raw is left without an encoding (c.enc nil), which
// accept stores as it is.
func (st *store) attempt(w *codecWorker, s *slot, i int, src []uint16) error {
	c := &s.chunks[i]
	held := c.enc != nil
	if !held {
		c.enc = w.spare
		w.spare = nil
		if c.enc == nil {
			c.enc = new(codec.Tensor)
		}
	}
	raw, err := s.plans[i].encode(&w.enc, c.enc, held, src, st.codecOf(s), s.stagger+i)
	if err != nil {
		return fmt.Errorf("encoding %s, chunk %d: %w", s.name, i, err)
	}
	if raw {
		w.spare, c.enc = c.enc, nil
		c.stats = codec.Stats{Histogram: codec.FullHistogram(src)}
		return nil
	}
	c.stats = c.enc.Stats
	return nil
}

// accept settles chunk i after an encoding attempt, in chunk order so that
// the pool is used deterministically: it keeps the encoding if it is smaller
// than the values and its overflow fits the pool, else the values as they
// are (counting a fallback when the pool was the reason).
func (st *store) accept(s *slot, i int, src []uint16, err error) {
	c := &s.chunks[i]
	st.uncharge(s, c)
	if err != nil {
		st.fail(err)
		return
	}
	if c.enc == nil {
		st.keepRaw(s, c, src, false)
		return
	}
	stored, overflow := int64(c.enc.StoredBytes()), int64(len(c.enc.Overflow))
	switch {
	case stored >= 2*int64(len(src)):
		st.keepRaw(s, c, src, false)
	case !st.pool.take(overflow):
		st.keepRaw(s, c, src, true)
	default:
		c.raw, c.fallback = nil, false
		c.pooled, c.charged = overflow, stored-overflow
		st.fail(st.alloc.Alloc(s.cat, c.charged))
	}
}

// keepRaw stores src in chunk c, dropping the encoding's memory.
func (st *store) keepRaw(s *slot, c *chunk, src []uint16, fallback bool) {
	c.enc = nil
	if cap(c.raw) < len(src) {
		c.raw = make([]uint16, len(src))
	}
	c.raw = c.raw[:len(src)]
	copy(c.raw, src)
	c.fallback = fallback
	c.charged = 2 * int64(len(src))
	st.fail(st.alloc.Alloc(s.cat, c.charged))
}

// uncharge returns chunk c's memory to the ledger and its overflow to the pool.
func (st *store) uncharge(s *slot, c *chunk) {
	st.alloc.Free(s.cat, c.charged)
	st.pool.give(c.pooled)
	c.charged, c.pooled = 0, 0
}

// overflowPool is the shared budget for the overflow areas of every
// compressed tensor of a run. It is reserved whole (charged to OverflowPool
// when the run starts), as a device allocator reserves it.
type overflowPool struct {
	budget, used, peak int64
}

func (p *overflowPool) take(n int64) bool {
	if p.used+n > p.budget {
		return false
	}
	p.used += n
	p.peak = max(p.peak, p.used)
	return true
}

func (p *overflowPool) give(n int64) { p.used -= n }
