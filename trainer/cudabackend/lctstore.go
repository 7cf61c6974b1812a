package cudabackend

import (
	"fmt"
	"maps"
	"time"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/gpu/lct"
	"lcttop/session"
	"lcttop/trainer"
)

// codecClock is the codec's share of a step.
type codecClock struct {
	encode, decode           time.Duration
	encodeBytes, decodeBytes int64 // dense bytes the codec encoded and decoded
	settles                  int   // windows settled: waits for queued encodes
	drains                   int   // full settles: waits for all the queued work
	sourceReads              int   // reads of pending tensors from their kept sources
	again                    int   // encodes made again at a settle
	decodes                  int   // single-tensor decode launches
	decodeBatches            int   // batched decode launches
	// relieve and window are the host's time where relieve settled
	// (memory near the peak) and where a full window settled the one
	// before it (the pipeline).
	relieve, window time.Duration
}

// lctStore keeps a run's parameters, optimizer states and saved activations
// compressed, as the CPU trainer's LCT store does: a read decodes into codec
// scratch, a commit encodes and frees the dense buffer, an update decodes a
// parameter and its states, applies the optimizer with the same kernels as
// the dense run and encodes them back. A tensor the codec does not make
// smaller (a LayerNorm gain of a few hundred values) is kept as it is, and
// its next rawRetry-1 writes are stored as they are without trying again.
//
// Encodes the codec does not finish at once stay pending, their dense
// source kept (and counted in the ledger) until the store settles them, a
// window at a time: when the open window's sources reach window bytes, the
// store closes it (the codec queues the reading back of its results) and
// settles the window closed before it, whose results the device has
// produced meanwhile, so that the device always has queued work while the
// host waits. At the end of every step it settles everything. A read of a pending tensor copies its
// source. See docs/cuda-trainer.md, "Syncs".
type lctStore struct {
	mem     *Mem
	ops     *gptOps
	codec   *lct.Codec
	classes map[session.TensorClass]session.ClassCodec
	// chosen is the codec choice of single tensors, by name, over their
	// class's.
	chosen map[string]session.ClassCodec
	held   map[*slot]*lctHeld
	clock  codecClock

	open      *lctWindow // encodes since the last close
	closed    *lctWindow // closed, not yet settled (nil: none)
	pendingOf map[*slot]pendingRef
	window    int64
	wide      int64 // windows a window may grow to away from the peak
	// slack is how far past its recorded peak the run may go before
	// relieve waits for pending encodes (LCTOptions.PeakSlack).
	slack   int64
	rawLeft map[*slot]int // writes still to be stored as they are
	// rawBelow: tensors of at most this many values are always stored as
	// they are (smallParamLimit).
	rawBelow int

	// kept is the last weight view a reader handed back (at most
	// keptLimit bytes): backward reads a weight for its input gradient just
	// before its update, which takes the view instead of decoding again.
	kept struct {
		s *slot
		p gpu.Ptr
	}
}

// keptLimit caps the weight view kept between a read and the update (the
// per-block matrices; not the embedding and head, whose views would add to
// the peak at the head's backward).
const keptLimit = 16 << 20

// rawRetry is how often a tensor the codec did not make smaller is tried
// again (its codebook may have been refitted since).
const rawRetry = 8

type pendingEncode struct {
	s   *slot // nil: dropped (replaced or released before its settle)
	src gpu.Ptr
}

// lctWindow is a window of pending encodes.
type lctWindow struct {
	entries []pendingEncode
	bytes   int64       // dense bytes of the entries not dropped
	codec   *lct.Window // once closed
}

// pendingRef is where a slot's pending encode is.
type pendingRef struct {
	w *lctWindow
	i int
}

// defaultWindow is the dense bytes of one window of encodes: an eighth of
// the parameters' bytes, within 128 KiB..16 MiB, so that the sources kept
// (two windows at most: the closed one and the open one) stay small beside
// what the run holds.
func defaultWindow(m trainer.ModelConfig) int64 {
	return min(max(2*int64(m.ParamCount())/8, 128<<10), 16<<20)
}

// lctHeld is what an LCT slot holds: its compressed form, or its raw values
// (with the codebook of the encode that found compression did not pay).
type lctHeld struct {
	enc *lct.Tensor
	raw gpu.Ptr
	cb  codec.Codebook
}

func newLCTStore(mem *Mem, c *lct.Codec, classes map[session.TensorClass]session.ClassCodec, window int64) (*lctStore, error) {
	for _, cl := range trainer.TensorClasses {
		if _, ok := classes[cl]; !ok {
			return nil, fmt.Errorf("LCT store: no codec setting for class %s", cl)
		}
	}
	if window <= 0 {
		return nil, fmt.Errorf("LCT store: window of %d bytes", window)
	}
	return &lctStore{mem: mem, ops: newGPTOps(mem), codec: c, classes: maps.Clone(classes), chosen: map[string]session.ClassCodec{}, held: map[*slot]*lctHeld{},
		open: &lctWindow{}, pendingOf: map[*slot]pendingRef{}, window: window, wide: wideWindows, rawLeft: map[*slot]int{}}, nil
}

// encode stores the values at p (dense, s.n of them) as s's new contents,
// replacing what s held. The store owns p from here: it frees p once the
// encode is settled.
func (st *lctStore) encode(s *slot, p gpu.Ptr) error {
	start := time.Now()
	defer func() { st.clock.encode += time.Since(start) }()
	st.dropPending(s)
	st.dropKept(s)
	if s.n <= st.rawBelow {
		return st.keepRaw(s, p)
	}
	if st.rawLeft[s] > 0 {
		st.rawLeft[s]--
		return st.keepRaw(s, p)
	}
	var prev *lct.Tensor
	h := st.held[s]
	if h != nil {
		prev = h.enc
	}
	st.clock.encodeBytes += 2 * int64(s.n)
	enc, err := st.codec.Encode(st.mem, s.name, s.cat, p, s.n, st.codecOf(s), prev)
	if err != nil {
		st.mem.Free(p)
		return fmt.Errorf("encoding %s: %w", s.name, err)
	}
	if h != nil {
		if h.enc != nil && h.enc != enc {
			st.codec.Free(h.enc)
		}
		if h.raw != 0 {
			st.mem.Free(h.raw)
		}
	}
	st.held[s] = &lctHeld{enc: enc}
	if enc.Settled() {
		return st.finish(s, p)
	}
	st.addPending(s, p)
	return st.closeIfFull()
}

// addPending puts s's encode from src in the open window.
func (st *lctStore) addPending(s *slot, src gpu.Ptr) {
	w := st.open
	st.pendingOf[s] = pendingRef{w, len(w.entries)}
	w.entries = append(w.entries, pendingEncode{s: s, src: src})
	w.bytes += 2 * int64(s.n)
}

// closeIfFull closes the open window once its sources reach a wide
// window (wideWindows windows), and settles the closed window early,
// without waiting for the open one to fill, once the sources of both pass
// two wide windows (a large tensor's). Near the run's peak, relieve brings
// the sources kept back to two windows before anything is allocated, so
// that the pipeline costs no memory at the peak; away from it, wide
// windows mean fewer settles and fewer, larger encode launches.
func (st *lctStore) closeIfFull() error {
	start := time.Now()
	defer func() { st.clock.window += time.Since(start) }()
	wide := st.wide * st.window
	if st.closed != nil && st.closed.bytes+st.open.bytes > 2*wide {
		w := st.closed
		st.closed = nil
		if err := st.settleWindow(w); err != nil {
			return err
		}
	}
	if st.open.bytes < wide {
		return nil
	}
	return st.closeWindow()
}

// wideWindows is how many windows a window may grow to away from the peak
// (lctStore.wide).
const wideWindows = 4

// relieve implements store: where bytes more, and two windows of sources
// (room for what the store allocates on its own besides), would take the
// run past the peak it has recorded, the windows are closed and settled
// (waiting for their encodes) until the sources kept are no more than two
// windows' (the last tensor may pass that by itself). Its callers are
// outside the store's own calls, so settling is safe there.
func (st *lctStore) relieve(bytes int64) error {
	if st.mem.Live()+bytes+2*st.window <= st.mem.Ledger().PeakTotal()+st.slack {
		return nil
	}
	start := time.Now()
	defer func() { st.clock.relieve += time.Since(start) }()
	for st.open.bytes+st.closedBytes() > 2*st.window {
		if w := st.closed; w != nil {
			st.closed = nil
			if err := st.settleWindow(w); err != nil {
				return err
			}
			continue
		}
		if st.open.bytes == 0 {
			break
		}
		if err := st.closeWindow(); err != nil {
			return err
		}
	}
	return nil
}

// closedBytes is the sources of the closed window's encodes.
func (st *lctStore) closedBytes() int64 {
	if st.closed == nil {
		return 0
	}
	return st.closed.bytes
}

// closeWindow closes the open window (the codec queues its reading back)
// and then settles the window closed before it, if any: its results were
// queued a window ago, so the wait ends while the device still has the
// work of the window just closed to do.
func (st *lctStore) closeWindow() error {
	cw, err := st.codec.CloseWindow(st.mem)
	if err != nil {
		return err
	}
	w := st.open
	w.codec = cw
	st.open = &lctWindow{}
	prev := st.closed
	st.closed = w
	if prev == nil {
		return nil
	}
	return st.settleWindow(prev)
}

// keepRaw stores p's values as they are in s (p is freed).
func (st *lctStore) keepRaw(s *slot, p gpu.Ptr) error {
	defer st.mem.Free(p)
	h := st.held[s]
	if h == nil {
		h = &lctHeld{}
		st.held[s] = h
	}
	if h.enc != nil {
		st.codec.Free(h.enc)
		h.enc = nil
	}
	if h.raw == 0 {
		r, err := st.mem.Alloc(s.cat, 2*int64(s.n))
		if err != nil {
			return err
		}
		h.raw = r
	}
	return st.mem.Dev().Copy(h.raw, p, 2*int64(s.n))
}

// finish completes a settled encode of s from p (then freed): a tensor not
// smaller compressed is kept as it is, and so are its next writes.
func (st *lctStore) finish(s *slot, p gpu.Ptr) error {
	h := st.held[s]
	if h.enc.Bytes() < 2*int64(s.n) {
		st.mem.Free(p)
		return nil
	}
	h.cb = h.enc.Codebook()
	st.rawLeft[s] = rawRetry - 1
	return st.keepRaw(s, p)
}

// dropPending forgets s's pending encode (its contents are being replaced
// or released) and frees its source.
func (st *lctStore) dropPending(s *slot) {
	ref, ok := st.pendingOf[s]
	if !ok {
		return
	}
	delete(st.pendingOf, s)
	e := &ref.w.entries[ref.i]
	if h := st.held[s]; h != nil && h.enc != nil {
		st.codec.Unqueue(h.enc)
	}
	st.mem.Free(e.src)
	ref.w.bytes -= 2 * int64(s.n)
	*e = pendingEncode{}
}

// maxSettleRounds bounds the settles an encode may need: the first, a
// recode with a fitted codebook, its overflow room, and one more.
const maxSettleRounds = 4

// settle completes every pending encode and checks the device's work
// queued so far (the end of a step): it closes the open window and settles it after the
// closed one, and the windows of what they encode again.
func (st *lctStore) settle() error {
	start := time.Now()
	defer func() { st.clock.encode += time.Since(start) }()
	st.clock.drains++
	for range maxSettleRounds {
		if err := st.closeWindow(); err != nil {
			return err
		}
		w := st.closed
		st.closed = nil
		if err := st.settleWindow(w); err != nil {
			return err
		}
		if len(st.pendingOf) == 0 {
			return nil
		}
	}
	return fmt.Errorf("LCT store: %d encodes still pending after %d settles", len(st.pendingOf), maxSettleRounds)
}

// settleWindow settles closed window w: the encodes the codec made again
// move to the open window with their sources; the others are finished
// (their sources freed, a tensor not smaller kept as it is).
func (st *lctStore) settleWindow(w *lctWindow) error {
	st.clock.settles++
	var pend []lct.Pending
	var idx []int
	for i, e := range w.entries {
		if e.s != nil {
			pend = append(pend, lct.Pending{T: st.held[e.s].enc, Src: e.src})
			idx = append(idx, i)
		}
	}
	again, err := st.codec.SettleWindow(st.mem, w.codec, pend)
	if err != nil {
		// The step has failed: give the sources back.
		for _, i := range idx {
			st.dropPending(w.entries[i].s)
		}
		return err
	}
	st.clock.again += len(again)
	redo := make([]bool, len(pend))
	for _, k := range again {
		redo[k] = true
	}
	var first error
	for k, i := range idx {
		e := w.entries[i]
		delete(st.pendingOf, e.s)
		w.entries[i] = pendingEncode{}
		switch {
		case redo[k]:
			st.addPending(e.s, e.src)
		default:
			if err := st.finish(e.s, e.src); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// decode writes s's values to p. A tensor whose encode is pending still
// has its values in its source: they are copied (queued, no wait).
func (st *lctStore) decode(s *slot, p gpu.Ptr) error {
	if ref, ok := st.pendingOf[s]; ok {
		st.clock.sourceReads++
		return st.mem.Dev().Copy(p, ref.w.entries[ref.i].src, 2*int64(s.n))
	}
	h, ok := st.held[s]
	if !ok {
		return fmt.Errorf("%s read before it was written", s.name)
	}
	if h.enc == nil {
		return st.mem.Dev().Copy(p, h.raw, 2*int64(s.n))
	}
	start := time.Now()
	err := st.codec.Decode(p, h.enc)
	st.clock.decode += time.Since(start)
	st.clock.decodes++
	st.clock.decodeBytes += 2 * int64(s.n)
	if err != nil {
		return fmt.Errorf("decoding %s: %w", s.name, err)
	}
	return nil
}

// ready orders the trainer's use of view p after the decode into it (the
// codec's side stream may still be writing it).
func (st *lctStore) ready(p gpu.Ptr) error { return st.codec.Ready(p) }

func (st *lctStore) set(s *slot, v []uint16) error {
	if len(v) != s.n {
		return fmt.Errorf("%s: %d values, want %d", s.name, len(v), s.n)
	}
	p, err := st.mem.Alloc(session.CodecScratch, 2*int64(s.n))
	if err != nil {
		return err
	}
	if err := st.mem.Dev().Upload(p, gpu.Bytes(v)); err != nil {
		st.mem.Free(p)
		return err
	}
	return st.encode(s, p)
}

func (st *lctStore) get(s *slot) ([]uint16, error) {
	p, err := st.read(s)
	if err != nil {
		return nil, err
	}
	defer st.done(s, p)
	if err := st.ready(p); err != nil {
		return nil, err
	}
	v := make([]uint16, s.n)
	if err := st.mem.Dev().Download(gpu.Bytes(v), p); err != nil {
		return nil, err
	}
	// A corrupt tensor shows in the status the codec reads.
	return v, st.settle()
}

// alwaysRaw is s's raw storage when s is one of the small tensors always
// stored as they are (rawBelow), else 0: a read hands it out as the view,
// and an update applies the optimizer to it in place, as the dense run
// does, without copies.
func (st *lctStore) alwaysRaw(s *slot) gpu.Ptr {
	if s.n > st.rawBelow {
		return 0
	}
	if h := st.held[s]; h != nil && h.enc == nil {
		return h.raw
	}
	return 0
}

func (st *lctStore) read(s *slot) (gpu.Ptr, error) {
	if raw := st.alwaysRaw(s); raw != 0 {
		return raw, nil
	}
	p, err := st.mem.Alloc(session.CodecScratch, 2*int64(s.n))
	if err != nil {
		return 0, err
	}
	if err := st.decode(s, p); err != nil {
		st.mem.Free(p)
		return 0, err
	}
	return p, nil
}

func (st *lctStore) readAhead(slots []*slot, views []gpu.Ptr) error {
	return st.readBatch(slots, views)
}

func (st *lctStore) viewBytes(s *slot) int64 {
	if st.alwaysRaw(s) != 0 {
		return 0
	}
	return alignUp(2 * int64(s.n))
}

func (st *lctStore) done(s *slot, p gpu.Ptr) {
	if p == st.alwaysRaw(s) {
		// Its storage, handed out by read. As when it was a copy, it takes
		// the kept view's place: a block's bias read after its weight ends
		// that weight's view (in forward, the last block's would otherwise
		// stay live to the logits, the run's peak).
		st.dropKept(nil)
		return
	}
	if s.class != session.ClassWeight || 2*int64(s.n) > keptLimit {
		st.mem.Free(p)
		return
	}
	st.dropKept(nil)
	st.kept.s, st.kept.p = s, p
}

// dropKept frees the kept view if it is s's (any, for nil).
func (st *lctStore) dropKept(s *slot) {
	if st.kept.p != 0 && (s == nil || st.kept.s == s) {
		st.mem.Free(st.kept.p)
		st.kept.s, st.kept.p = nil, 0
	}
}

func (st *lctStore) begin(s *slot) (gpu.Ptr, error) { return st.mem.Alloc(s.cat, 2*int64(s.n)) }

func (st *lctStore) commit(s *slot, p gpu.Ptr, keep bool) error {
	if !keep {
		st.mem.Free(p)
		return nil
	}
	return st.encode(s, p)
}

func (st *lctStore) release(s *slot) {
	st.dropPending(s)
	st.dropKept(s)
	h, ok := st.held[s]
	if !ok {
		return
	}
	if h.enc != nil {
		st.codec.Free(h.enc)
	}
	if h.raw != 0 {
		st.mem.Free(h.raw)
	}
	delete(st.held, s)
}

// update decodes the parameter and its states into codec scratch (those
// not given decoded ahead), applies the optimizer with the dense run's
// kernels (so both runs compute the same bits) and encodes them back (the
// encodes own the scratch from there).
func (st *lctStore) update(p *param, g gpu.Ptr, step int, opt optimizerSettings, ahead []gpu.Ptr) error {
	given := false
	for i, v := range ahead {
		if v != 0 && v != st.alwaysRaw(p.state[i]) {
			given = true
		}
	}
	if !given {
		if done, err := st.updateRaw(p, g, step, opt); done || err != nil {
			return err
		}
	}
	return st.updateDecoded(p, append([]*slot{p.w}, p.state...), g, step, opt, ahead)
}

func (st *lctStore) aheadStates() bool { return true }

// updateRaw applies the update in place when the parameter and its states
// are all always raw (false otherwise): no copies in or out.
func (st *lctStore) updateRaw(p *param, g gpu.Ptr, step int, opt optimizerSettings) (bool, error) {
	w := st.alwaysRaw(p.w)
	if w == 0 {
		return false, nil
	}
	var states [2]gpu.Ptr
	for i, s := range p.state {
		if states[i] = st.alwaysRaw(s); states[i] == 0 {
			return false, nil
		}
	}
	if opt.AdamW != nil {
		return true, st.ops.AdamW(w, states[0], states[1], g, p.n, opt.AdamW.Step(step, p.decay))
	}
	return true, st.ops.SGD(w, states[0], g, p.n, opt.SGD.Step(step, p.decay))
}

// updateDecoded decodes, updates with the dense run's kernels and encodes.
func (st *lctStore) updateDecoded(p *param, slots []*slot, g gpu.Ptr, step int, opt optimizerSettings, ahead []gpu.Ptr) error {
	views := make([]gpu.Ptr, len(slots))
	for i, v := range ahead {
		if v != 0 && v != st.alwaysRaw(slots[i+1]) {
			views[i+1] = v
		}
	}
	freeViews := func(from int) {
		for _, v := range views[from:] {
			if v != 0 {
				st.mem.Free(v)
			}
		}
	}
	for i, s := range slots {
		if s == st.kept.s {
			views[i], st.kept.s, st.kept.p = st.kept.p, nil, 0
		}
	}
	if err := st.readBatch(slots, views); err != nil {
		freeViews(0)
		return err
	}
	for _, v := range views {
		if err := st.ready(v); err != nil {
			freeViews(0)
			return err
		}
	}
	var err error
	if opt.AdamW != nil {
		err = st.ops.AdamW(views[0], views[1], views[2], g, p.n, opt.AdamW.Step(step, p.decay))
	} else {
		err = st.ops.SGD(views[0], views[1], g, p.n, opt.SGD.Step(step, p.decay))
	}
	if err != nil {
		freeViews(0)
		return err
	}
	for i, s := range slots {
		if err := st.encode(s, views[i]); err != nil {
			freeViews(i + 1)
			return err
		}
	}
	return nil
}

// readBatch reads into views each slot whose view is 0, as read does; the
// settled compressed ones in one launch (a parameter and its states: the
// views are all live at the update anyway, so allocating them first adds
// nothing to the peak).
func (st *lctStore) readBatch(slots []*slot, views []gpu.Ptr) error {
	var dsts []gpu.Ptr
	var encs []*lct.Tensor
	var bytes int64
	for i, s := range slots {
		if views[i] != 0 {
			continue
		}
		h := st.held[s]
		if _, pending := st.pendingOf[s]; !pending && h != nil && h.enc != nil {
			p, err := st.mem.Alloc(session.CodecScratch, 2*int64(s.n))
			if err != nil {
				return err
			}
			views[i] = p
			dsts, encs = append(dsts, p), append(encs, h.enc)
			bytes += 2 * int64(s.n)
			continue
		}
		v, err := st.read(s)
		if err != nil {
			return err
		}
		views[i] = v
	}
	if len(encs) == 0 {
		return nil
	}
	start := time.Now()
	err := st.codec.DecodeBatch(dsts, encs)
	st.clock.decode += time.Since(start)
	if len(encs) == 1 {
		st.clock.decodes++
	} else {
		st.clock.decodeBatches++
	}
	st.clock.decodeBytes += bytes
	if err != nil {
		return fmt.Errorf("decoding %s's update: %w", slots[0].name, err)
	}
	return nil
}

// rawValues downloads the values of those of slots stored as they are, in
// one copy: a download each would wait for the device once per tensor, and
// a model keeps hundreds of small tensors so (nil when fewer than two).
func (st *lctStore) rawValues(slots []*slot) (map[*slot][]uint16, error) {
	var raw []*slot
	var total int64
	for _, s := range slots {
		if h := st.held[s]; h != nil && h.enc == nil && h.raw != 0 {
			raw = append(raw, s)
			total += 2 * int64(s.n)
		}
	}
	if len(raw) < 2 {
		return nil, nil
	}
	buf, err := st.mem.Alloc(session.CodecScratch, total)
	if err != nil {
		return nil, err
	}
	defer st.mem.Free(buf)
	var off int64
	for _, s := range raw {
		if err := st.mem.Dev().Copy(buf.Add(off), st.held[s].raw, 2*int64(s.n)); err != nil {
			return nil, err
		}
		off += 2 * int64(s.n)
	}
	all := make([]uint16, total/2)
	if err := st.mem.Dev().Download(gpu.Bytes(all), buf); err != nil {
		return nil, err
	}
	out := make(map[*slot][]uint16, len(raw))
	for _, s := range raw {
		out[s], all = all[:s.n:s.n], all[s.n:]
	}
	return out, nil
}

// tensorStats reports slot s as the UI shows it; raw holds the values of
// tensors stored as they are where rawValues downloaded them.
func (st *lctStore) tensorStats(s *slot, raw map[*slot][]uint16) (session.TensorStats, bool, error) {
	h, ok := st.held[s]
	if !ok {
		return session.TensorStats{}, false, nil
	}
	var x codec.Stats
	cb := h.cb
	if h.enc != nil {
		var err error
		if x, err = h.enc.Stats(); err != nil {
			return session.TensorStats{}, false, fmt.Errorf("%s: %w", s.name, err)
		}
		cb = h.enc.Codebook()
	} else {
		// Stored as it is: the figures of its values, 8 bits per exponent.
		v := raw[s]
		if v == nil {
			v = make([]uint16, s.n)
			if err := st.mem.Dev().Download(gpu.Bytes(v), h.raw); err != nil {
				return session.TensorStats{}, false, fmt.Errorf("%s: %w", s.name, err)
			}
		}
		for _, u := range v {
			x.Histogram[(u>>7)&0xFF]++
		}
		x.Entropy = x.Histogram.Entropy()
		x.ExpectedBits = cb.ExpectedBits(&x.Histogram)
		x.AllocatedBits, x.UsedBits = 8, 8
	}
	cc := st.codecOf(s)
	ts := session.TensorStats{
		Name: s.name, Class: s.class, Elements: s.n, Preset: cc.Preset, Distribution: cc.Dist,
		Ratio: x.Ratio, StoredBytes: x.StoredBytes, AllocatedBits: x.AllocatedBits, UsedBits: x.UsedBits,
		Entropy: x.Entropy, ExpectedBits: x.ExpectedBits, EscapeRate: x.EscapeRate, OverflowRate: x.OverflowRate,
		SpillStreamRate: x.SpillStreamRate, Histogram: [256]uint64(x.Histogram),
		CodeLengths: cb.Lengths, EscapeLength: cb.EscLen,
	}
	if h.enc == nil {
		ts.Ratio, ts.StoredBytes, ts.Fallback, ts.Raw = 1, 2*s.n, false, true
		if s.n <= st.rawBelow {
			ts.RawReason = smallReason
		}
	}
	return ts, true, nil
}
