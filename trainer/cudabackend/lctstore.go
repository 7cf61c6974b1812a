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
// reference codec on the host; package gpu's codec is to implement it on the
// device (see docs/cuda-trainer.md), with the fused optimizer update.
type Codec interface {
	// Encode compresses the n values at src with setting cc into device
	// memory charged to category cat of mem.
	Encode(mem *Mem, cat trainer.Category, src devPtr, n int, cc trainer.ClassCodec) (Compressed, error)
	// Decode writes the values of t to dst.
	Decode(dst devPtr, t Compressed) error
	// Free releases t's device memory.
	Free(mem *Mem, t Compressed)
}

// Compressed is one compressed tensor in device memory.
type Compressed interface {
	// Bytes is the device memory it holds (its serialised size, format.md §5).
	Bytes() int64
	// Stats is what encoding it measured.
	Stats() codec.Stats
	// Codebook is the code it was encoded with.
	Codebook() codec.Codebook
}

// codecClock is the codec's share of a step.
type codecClock struct {
	encode, decode           time.Duration
	encodeBytes, decodeBytes int64
}

// lctStore keeps a run's parameters, optimizer states and saved activations
// compressed, as the CPU trainer's LCT store does: a read decodes into codec
// scratch, a commit encodes and frees the dense buffer, an update decodes a
// parameter and its states, applies the optimizer with the same kernels as
// the dense run and encodes them back. A tensor the codec would not make
// smaller (a LayerNorm gain of a few hundred values) is kept as it is.
type lctStore struct {
	mem     *Mem
	ops     *Ops
	codec   Codec
	classes map[trainer.TensorClass]trainer.ClassCodec
	held    map[*slot]*lctHeld
	clock   codecClock
}

// lctHeld is what an LCT slot holds: its compressed form, or its raw values.
type lctHeld struct {
	enc   Compressed
	raw   devPtr
	stats codec.Stats
	cb    codec.Codebook
}

func newLCTStore(mem *Mem, c Codec, classes map[trainer.TensorClass]trainer.ClassCodec) (*lctStore, error) {
	for _, cl := range trainer.TensorClasses {
		if _, ok := classes[cl]; !ok {
			return nil, fmt.Errorf("LCT store: no codec setting for class %s", cl)
		}
	}
	return &lctStore{mem: mem, ops: NewOps(mem), codec: c, classes: classes, held: map[*slot]*lctHeld{}}, nil
}

// encode stores the values at p (dense, s.n of them) as s's compressed form,
// replacing what s held; p is left to the caller.
func (st *lctStore) encode(s *slot, p devPtr) error {
	start := time.Now()
	enc, err := st.codec.Encode(st.mem, s.cat, p, s.n, st.classes[s.class])
	st.clock.encode += time.Since(start)
	st.clock.encodeBytes += 2 * int64(s.n)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", s.name, err)
	}
	st.release(s)
	h := &lctHeld{stats: enc.Stats(), cb: enc.Codebook()}
	if enc.Bytes() >= 2*int64(s.n) {
		// Not smaller compressed: keep the values as they are.
		st.codec.Free(st.mem, enc)
		if h.raw, err = st.mem.Alloc(s.cat, 2*int64(s.n)); err != nil {
			return err
		}
		if err := st.mem.Dev().Copy(h.raw, p, 2*int64(s.n)); err != nil {
			return err
		}
	} else {
		h.enc = enc
	}
	st.held[s] = h
	return nil
}

// decode writes s's values to p.
func (st *lctStore) decode(s *slot, p devPtr) error {
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
	defer st.mem.Free(p)
	if err := st.mem.Dev().Upload(p, device.Bytes(v)); err != nil {
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
	return v, st.mem.Dev().Download(device.Bytes(v), p)
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

func (st *lctStore) done(_ *slot, p devPtr) { st.mem.Free(p) }

func (st *lctStore) begin(s *slot) (devPtr, error) { return st.mem.Alloc(s.cat, 2*int64(s.n)) }

func (st *lctStore) commit(s *slot, p devPtr, keep bool) error {
	defer st.mem.Free(p)
	if !keep {
		return nil
	}
	return st.encode(s, p)
}

func (st *lctStore) release(s *slot) {
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
// bits) and encodes them back.
func (st *lctStore) update(p *param, g devPtr, step int, opt Optimizer) error {
	slots := append([]*slot{p.w}, p.state...)
	views := make([]devPtr, len(slots))
	defer func() {
		for _, v := range views {
			if v != 0 {
				st.mem.Free(v)
			}
		}
	}()
	for i, s := range slots {
		v, err := st.read(s)
		if err != nil {
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
		return err
	}
	for i, s := range slots {
		if err := st.encode(s, views[i]); err != nil {
			return err
		}
	}
	return nil
}

// tensorStats reports slot s as the UI shows it.
func (st *lctStore) tensorStats(s *slot) (trainer.TensorStats, bool) {
	h, ok := st.held[s]
	if !ok {
		return trainer.TensorStats{}, false
	}
	cc := st.classes[s.class]
	x := h.stats
	ts := trainer.TensorStats{
		Name: s.name, Class: s.class, Elements: s.n, Preset: cc.Preset.String(), Distribution: cc.Dist.String(),
		Ratio: x.Ratio, StoredBytes: x.StoredBytes, AllocatedBits: x.AllocatedBits, UsedBits: x.UsedBits,
		Entropy: x.Entropy, ExpectedBits: x.ExpectedBits, EscapeRate: x.EscapeRate, OverflowRate: x.OverflowRate,
		SpillStreamRate: x.SpillStreamRate, Histogram: [256]uint64(x.Histogram),
		CodeLengths: h.cb.Lengths, EscapeLength: h.cb.EscLen,
	}
	if h.enc == nil {
		ts.Ratio, ts.StoredBytes, ts.Fallback = 1, 2*s.n, false
	}
	return ts, true
}
