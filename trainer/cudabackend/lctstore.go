package cudabackend

import (
	"fmt"
	"time"

	"lcttop/codec"
	"lcttop/trainer"
	"lcttop/trainer/cudabackend/device"
)

// Codec compresses BF16 tensors held in device memory for the LCT run: its
// compressed tensors occupy device memory charged to the run's ledger, and
// Decode restores the exact values. HostCodec implements it with the
// reference codec on the host; GPUCodec with package gpu's kernels on the
// device (see docs/cuda-trainer.md).
type Codec interface {
	// Encode compresses the n values at src, the new contents of the
	// stored tensor key, with setting cc into device memory charged to
	// category cat of mem. prev is what key holds now (nil if nothing): the
	// codec may encode into it and return it; otherwise the caller frees
	// prev. The encode may still be running when Encode returns: until
	// Settle has checked it (Settled), src must stay as it is.
	Encode(mem *Mem, key string, cat trainer.Category, src devPtr, n int, cc trainer.ClassCodec, prev Compressed) (Compressed, error)
	// Settle waits for the device, reports what its work found wrong, and
	// completes every encode in pend: one whose spill did not fit is
	// encoded again from its source into more room. It may be called with
	// nothing pending, to check the work queued since the last call.
	Settle(mem *Mem, pend []Pending) error
	// Decode writes the values of t to dst (queued; a corrupt tensor is
	// reported by the next Settle at the latest).
	Decode(dst devPtr, t Compressed) error
	// Free releases t's device memory.
	Free(mem *Mem, t Compressed)
}

// Pending is an encode not yet settled and the values it encodes: the
// dense source Src, or for an output of a fused update, Job (its inputs and
// gradient, which the caller keeps until the settle).
type Pending struct {
	T   Compressed
	Src devPtr
	Job *FusedJob
}

// FusedJob is one fused optimizer update of compressed tensors: what it
// read and wrote, so that a settle can run it again.
type FusedJob struct {
	Ins, Outs []Compressed
	G         devPtr
	N         int
	Opt       Optimizer
	Step      int
	Decay     bool
}

// fusedUpdater is a codec that applies the optimizer to compressed
// tensors in one pass (GPUCodec with Fused set).
type fusedUpdater interface {
	// FusedUpdate queues job (Ins, G, ...) into new tensors for keys and
	// fills job.Outs; false when it does not apply (the caller decodes,
	// updates and encodes instead).
	FusedUpdate(mem *Mem, keys []string, cats []trainer.Category, job *FusedJob) (bool, error)
}

// Compressed is one compressed tensor in device memory.
type Compressed interface {
	// Settled reports whether the encode is known complete.
	Settled() bool
	// Bytes is its serialised size (format.md §5), once settled.
	Bytes() int64
	// Stats is what encoding it measured, once settled.
	Stats() (codec.Stats, error)
	// Codebook is the code it was encoded with.
	Codebook() codec.Codebook
}

// codecClock is the codec's share of a step.
type codecClock struct {
	encode, decode           time.Duration
	encodeBytes, decodeBytes int64
	settles                  int // waits for queued encodes
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
// source kept (and counted in the ledger) until the store settles them: when
// the pending sources reach window bytes, before a pending tensor is read,
// and at the end of every step (see docs/cuda-trainer.md, "Syncs").
type lctStore struct {
	mem     *Mem
	ops     *Ops
	codec   Codec
	classes map[trainer.TensorClass]trainer.ClassCodec
	held    map[*slot]*lctHeld
	clock   codecClock

	pending      []pendingEncode
	pendingOf    map[*slot]int // index into pending
	pendingBytes int64
	window       int64
	rawLeft      map[*slot]int // writes still to be stored as they are
	// rawBelow: tensors of at most this many values are always stored as
	// they are (smallParamLimit).
	rawBelow int

	// kept is the last weight view a reader handed back (at most
	// keptLimit bytes): backward reads a weight for its input gradient just
	// before its update, which takes the view instead of decoding again.
	kept struct {
		s *slot
		p devPtr
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
	s   *slot
	src devPtr
	job *FusedJob
}

// defaultWindow is the dense bytes an LCT store lets wait for a settle: a
// quarter of the parameters' bytes, so that the sources kept stay small
// beside what the run holds, within 256 KiB..64 MiB.
func defaultWindow(m trainer.ModelConfig) int64 {
	return min(max(2*int64(m.ParamCount())/4, 256<<10), 64<<20)
}

// lctHeld is what an LCT slot holds: its compressed form, or its raw values
// (with the codebook of the encode that found compression did not pay).
type lctHeld struct {
	enc Compressed
	raw devPtr
	cb  codec.Codebook
}

func newLCTStore(mem *Mem, c Codec, classes map[trainer.TensorClass]trainer.ClassCodec, window int64) (*lctStore, error) {
	for _, cl := range trainer.TensorClasses {
		if _, ok := classes[cl]; !ok {
			return nil, fmt.Errorf("LCT store: no codec setting for class %s", cl)
		}
	}
	if window <= 0 {
		return nil, fmt.Errorf("LCT store: window of %d bytes", window)
	}
	return &lctStore{mem: mem, ops: NewOps(mem), codec: c, classes: classes, held: map[*slot]*lctHeld{},
		pendingOf: map[*slot]int{}, window: window, rawLeft: map[*slot]int{}}, nil
}

// encode stores the values at p (dense, s.n of them) as s's new contents,
// replacing what s held. The store owns p from here: it frees p once the
// encode is settled.
func (st *lctStore) encode(s *slot, p devPtr) error {
	start := time.Now()
	defer func() {
		st.clock.encode += time.Since(start)
		st.clock.encodeBytes += 2 * int64(s.n)
	}()
	st.dropPending(s)
	st.dropKept(s)
	if s.n <= st.rawBelow {
		return st.keepRaw(s, p)
	}
	if st.rawLeft[s] > 0 {
		st.rawLeft[s]--
		return st.keepRaw(s, p)
	}
	var prev Compressed
	h := st.held[s]
	if h != nil {
		prev = h.enc
	}
	enc, err := st.codec.Encode(st.mem, s.name, s.cat, p, s.n, st.classes[s.class], prev)
	if err != nil {
		st.mem.Free(p)
		return fmt.Errorf("encoding %s: %w", s.name, err)
	}
	if h != nil {
		if h.enc != nil && h.enc != enc {
			st.codec.Free(st.mem, h.enc)
		}
		if h.raw != 0 {
			st.mem.Free(h.raw)
		}
	}
	st.held[s] = &lctHeld{enc: enc}
	if enc.Settled() {
		return st.finish(s, p)
	}
	st.pendingOf[s] = len(st.pending)
	st.pending = append(st.pending, pendingEncode{s: s, src: p})
	st.pendingBytes += 2 * int64(s.n)
	if st.pendingBytes >= st.window {
		return st.settleNow()
	}
	return nil
}

// keepRaw stores p's values as they are in s (p is freed).
func (st *lctStore) keepRaw(s *slot, p devPtr) error {
	defer st.mem.Free(p)
	h := st.held[s]
	if h == nil {
		h = &lctHeld{}
		st.held[s] = h
	}
	if h.enc != nil {
		st.codec.Free(st.mem, h.enc)
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
func (st *lctStore) finish(s *slot, p devPtr) error {
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
	i, ok := st.pendingOf[s]
	if !ok {
		return
	}
	delete(st.pendingOf, s)
	if st.pending[i].src != 0 {
		st.mem.Free(st.pending[i].src)
	}
	st.pendingBytes -= 2 * int64(s.n)
	st.pending[i] = pendingEncode{}
}

// settle completes every pending encode and checks the device's work
// queued so far (the end of a step, before a pending tensor is read).
func (st *lctStore) settle() error {
	start := time.Now()
	defer func() { st.clock.encode += time.Since(start) }()
	return st.settleNow()
}

func (st *lctStore) settleNow() error {
	st.clock.settles++
	var pend []Pending
	var owners []pendingEncode
	jobs := map[*FusedJob]bool{}
	for _, p := range st.pending {
		if p.s != nil {
			pend = append(pend, Pending{T: st.held[p.s].enc, Src: p.src, Job: p.job})
			owners = append(owners, p)
			if p.job != nil {
				jobs[p.job] = true
			}
		}
	}
	st.pending, st.pendingBytes = st.pending[:0], 0
	clear(st.pendingOf)
	err := st.codec.Settle(st.mem, pend)
	for _, p := range owners {
		if p.job != nil {
			continue // its outputs stay compressed; the job is freed below
		}
		if err != nil {
			st.mem.Free(p.src)
			continue
		}
		if ferr := st.finish(p.s, p.src); ferr != nil && err == nil {
			err = ferr
		}
	}
	for j := range jobs {
		for _, in := range j.Ins {
			st.codec.Free(st.mem, in)
		}
		st.mem.Free(j.G)
	}
	return err
}

// decode writes s's values to p.
func (st *lctStore) decode(s *slot, p devPtr) error {
	if _, ok := st.pendingOf[s]; ok {
		if err := st.settle(); err != nil {
			return err
		}
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
	st.clock.decodeBytes += 2 * int64(s.n)
	if err != nil {
		return fmt.Errorf("decoding %s: %w", s.name, err)
	}
	return nil
}

func (st *lctStore) set(s *slot, v []uint16) error {
	if len(v) != s.n {
		return fmt.Errorf("%s: %d values, want %d", s.name, len(v), s.n)
	}
	p, err := st.mem.Alloc(trainer.CodecScratch, 2*int64(s.n))
	if err != nil {
		return err
	}
	if err := st.mem.Dev().Upload(p, device.Bytes(v)); err != nil {
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
	v := make([]uint16, s.n)
	if err := st.mem.Dev().Download(device.Bytes(v), p); err != nil {
		return nil, err
	}
	// A corrupt tensor shows in the status the codec reads.
	return v, st.codec.Settle(st.mem, nil)
}

func (st *lctStore) read(s *slot) (devPtr, error) {
	p, err := st.mem.Alloc(trainer.CodecScratch, 2*int64(s.n))
	if err != nil {
		return 0, err
	}
	if err := st.decode(s, p); err != nil {
		st.mem.Free(p)
		return 0, err
	}
	return p, nil
}

func (st *lctStore) done(s *slot, p devPtr) {
	if s.class != trainer.ClassWeight || 2*int64(s.n) > keptLimit {
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

func (st *lctStore) begin(s *slot) (devPtr, error) { return st.mem.Alloc(s.cat, 2*int64(s.n)) }

func (st *lctStore) commit(s *slot, p devPtr, keep bool) error {
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
		st.codec.Free(st.mem, h.enc)
	}
	if h.raw != 0 {
		st.mem.Free(h.raw)
	}
	delete(st.held, s)
}

// update decodes the parameter and its states into codec scratch, applies
// the optimizer with the dense run's kernels (so both runs compute the same
// bits) and encodes them back (the encodes own the scratch from there).
func (st *lctStore) update(p *param, g devPtr, step int, opt Optimizer) (bool, error) {
	slots := append([]*slot{p.w}, p.state...)
	if took, err := st.fusedUpdate(p, slots, g, step, opt); took || err != nil {
		return took, err
	}
	return false, st.updateUnfused(p, slots, g, step, opt)
}

// fusedUpdate applies the update in one pass on the compressed tensors
// when the codec can (every slot compressed and settled): the new tensors
// are pending until the settle, which keeps the old ones and g (the store
// takes g: true) to run it again if a spill did not fit.
func (st *lctStore) fusedUpdate(p *param, slots []*slot, g devPtr, step int, opt Optimizer) (bool, error) {
	fu, ok := st.codec.(fusedUpdater)
	if !ok {
		return false, nil
	}
	job := &FusedJob{G: g, N: p.n, Opt: opt, Step: step, Decay: p.decay}
	keys := make([]string, len(slots))
	cats := make([]trainer.Category, len(slots))
	for i, s := range slots {
		h := st.held[s]
		if _, pending := st.pendingOf[s]; pending || h == nil || h.enc == nil || st.rawLeft[s] > 0 {
			return false, nil
		}
		job.Ins = append(job.Ins, h.enc)
		keys[i], cats[i] = s.name, s.cat
	}
	start := time.Now()
	took, err := fu.FusedUpdate(st.mem, keys, cats, job)
	st.clock.encode += time.Since(start)
	if !took || err != nil {
		return false, err
	}
	st.dropKept(p.w)
	for i, s := range slots {
		st.held[s] = &lctHeld{enc: job.Outs[i]}
		st.pendingOf[s] = len(st.pending)
		st.pending = append(st.pending, pendingEncode{s: s, job: job})
		st.pendingBytes += 2 * int64(s.n)
	}
	if st.pendingBytes >= st.window {
		return true, st.settleNow()
	}
	return true, nil
}

// updateUnfused decodes, updates with the dense run's kernels and encodes.
func (st *lctStore) updateUnfused(p *param, slots []*slot, g devPtr, step int, opt Optimizer) error {
	views := make([]devPtr, len(slots))
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
			continue
		}
		v, err := st.read(s)
		if err != nil {
			freeViews(0)
			return err
		}
		views[i] = v
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

// tensorStats reports slot s as the UI shows it.
func (st *lctStore) tensorStats(s *slot) (trainer.TensorStats, bool, error) {
	h, ok := st.held[s]
	if !ok {
		return trainer.TensorStats{}, false, nil
	}
	var x codec.Stats
	cb := h.cb
	if h.enc != nil {
		var err error
		if x, err = h.enc.Stats(); err != nil {
			return trainer.TensorStats{}, false, fmt.Errorf("%s: %w", s.name, err)
		}
		cb = h.enc.Codebook()
	} else {
		// Stored as it is: the figures of its values, 8 bits per exponent.
		v := make([]uint16, s.n)
		if err := st.mem.Dev().Download(device.Bytes(v), h.raw); err != nil {
			return trainer.TensorStats{}, false, fmt.Errorf("%s: %w", s.name, err)
		}
		for _, u := range v {
			x.Histogram[(u>>7)&0xFF]++
		}
		x.Entropy = x.Histogram.Entropy()
		x.ExpectedBits = cb.ExpectedBits(&x.Histogram)
		x.AllocatedBits, x.UsedBits = 8, 8
	}
	cc := st.classes[s.class]
	ts := trainer.TensorStats{
		Name: s.name, Class: s.class, Elements: s.n, Preset: cc.Preset.String(), Distribution: cc.Dist.String(),
		Ratio: x.Ratio, StoredBytes: x.StoredBytes, AllocatedBits: x.AllocatedBits, UsedBits: x.UsedBits,
		Entropy: x.Entropy, ExpectedBits: x.ExpectedBits, EscapeRate: x.EscapeRate, OverflowRate: x.OverflowRate,
		SpillStreamRate: x.SpillStreamRate, Histogram: [256]uint64(x.Histogram),
		CodeLengths: cb.Lengths, EscapeLength: cb.EscLen,
	}
	if h.enc == nil {
		ts.Ratio, ts.StoredBytes, ts.Fallback, ts.Raw = 1, 2*s.n, false, true
	}
	return ts, true, nil
}
