package lct

import (
	"fmt"
	"time"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
)

// Codec compresses the BF16 tensors of a training run where they lie, in
// the trainer's device memory (gpu.Ptr), with package gpu's kernels: its
// work is queued on gpu's side stream beside the trainer's and ordered
// against it by events (docs/cuda-trainer.md, "The side stream"). Its
// tensors' sections come from the run's Memory, which counts them. Encodes
// are complete only once a window's settle has checked them: until then
// the caller keeps their sources.
//
// It keeps, per stored tensor (key), the codebook, layout and overflow room
// of its last encode, so that an encode in steady state queues its kernels
// and returns without waiting for the device:
//   - the first encode of a key fits a codebook to the sample histogram, as
//     the reference codec does (one wait), and writes the same bytes;
//   - Encode sets up the tensor and queues its launch in the codec: the
//     queue is flushed in one EncodeBatch (one launch of the encoder and
//     one of its overflow pass for all of them, instead of two or three
//     launches each, most of whose CTAs would idle) when the window closes
//     or when something needs a queued tensor's bytes first (a decode);
//   - every encode also counts the exponent histogram of its values into
//     a device arena (in the same pass: EncodeBatch counts as it reads);
//     CloseWindow queues the copy of the window's histograms and of the
//     status words to the host, and SettleWindow, one window later, keeps
//     each tensor's histogram for its figures; the key's next encode
//     refits its codebook if it has drifted (see refitSlack) and chooses
//     the layout for that histogram;
//   - the overflow buffer has the room the key's recent encodes needed
//     plus headroom (overflowRoom); SettleWindow finds the encodes whose
//     spill did not fit and encodes them again from their sources.
//
// A Codec from NewReference runs the reference codec (package codec) on the
// host instead: every encode and decode is complete when it returns.
//
// See docs/cuda-trainer.md, "The GPU codec".
type Codec struct {
	dev   *gpu.Device // nil: the reference codec
	keys  map[string]*keyState
	arena histArena
	win   int // the open window's number
	// profile times every queued operation with device events (two event
	// records per operation), added up in the figures.
	profile    bool
	prof       codecProfile
	ovf        map[string]OverflowUse // settled encodes' overflow room and use
	settleWait time.Duration          // host time blocked at settles since TakeFigures
	// queue holds the encodes set up and not yet launched (see flush).
	queue []queuedEncode
	// decoded holds, per view a decode wrote, the side stream's point
	// after it, until Ready orders the trainer's use after it.
	decoded map[gpu.Ptr]uint64
	// mem is the run the codec codes for, and charged what its device
	// holds for its own work (status words, batch tables, scratch) as
	// charged to that run's ledger.
	mem     Memory
	charged int64
	ref     reference
}

// New returns a codec on d, which must be the GPU (or emulation) the
// trainer's memory lives on; its work goes on d's side stream when d has
// one on (gpu.Device.UseSideStream), else on the trainer's stream.
func New(d *gpu.Device) *Codec {
	return &Codec{dev: d, keys: map[string]*keyState{}}
}

// OnDevice reports whether the codec runs on the device (false: the
// reference codec on the host).
func (c *Codec) OnDevice() bool { return c.dev != nil }

// SetProfile turns on or off the timing of the codec's device work.
func (c *Codec) SetProfile(on bool) { c.profile = on }

// keyState is what the codec remembers of one stored tensor.
type keyState struct {
	cc     session.ClassCodec
	cb     codec.Codebook
	layout codec.Layout
	ovRoom int // overflow bytes the next encode gets
	// hist is the histogram of the last settled encode, checked for a
	// refit at the next encode (the fit is host time: done where the key
	// needs it, not for every tensor of a window at its settle).
	hist    codec.Histogram
	toCheck bool
	job     *refitJob // the refit for hist, started at the settle (refit.go)
}

// chargeDevice brings the run's ledger up to date with what the device
// holds for the codec's own work, as codec scratch.
func (c *Codec) chargeDevice() error {
	if c.mem == nil || c.dev == nil {
		return nil
	}
	now := c.dev.InUse()
	if err := c.mem.Charge(session.CodecScratch, now-c.charged); err != nil {
		return err
	}
	c.charged = now
	return nil
}

// Encode compresses the n values at src, the new contents of the stored
// tensor key, with setting cc into memory of mem charged to category cat.
// prev is what key holds now (nil if nothing): the codec may encode into it
// and return it; otherwise the caller frees prev. The encode may still be
// queued when Encode returns: until a settle has checked it (Settled), src
// must stay as it is.
func (c *Codec) Encode(mem Memory, key string, cat session.Category, src gpu.Ptr, n int, cc session.ClassCodec, prev *Tensor) (*Tensor, error) {
	if c.dev == nil {
		return c.ref.encode(mem, cat, src, n, cc)
	}
	if c.mem != mem { // a new run (the sweep's next trial)
		c.mem, c.charged = mem, 0
	}
	if err := c.chargeDevice(); err != nil {
		return nil, err
	}
	k, err := c.key(key, src, n, cc)
	if err != nil {
		return nil, err
	}
	if k.toCheck {
		takeRefit(k)
		k.toCheck = false
	}
	g := prev
	if g != nil {
		// A queued encode of prev is replaced by this one (the store has
		// dropped it already; this keeps a batch from holding it twice).
		c.unqueue(g)
	}
	if c.arena.mem != mem {
		// Another run: the last one's step settles launched its queue
		// unless it failed, and then its encodes, into memory its Memory
		// has taken back, must not run.
		c.dropQueue()
	}
	slot, err := c.arena.take(mem, c.dev)
	if err != nil {
		return nil, err
	}
	if g == nil || g.t.N() != n || g.t.Layout() != k.layout || g.t.OverflowCap() > k.ovRoom+k.ovRoom/4+4096 {
		// A new tensor: none yet, another layout, or far more overflow
		// room than the key needs.
		alloc := &sections{mem: mem}
		t, err := c.dev.NewTensorIn(alloc, n, k.layout, k.cb, k.ovRoom, cat)
		if err != nil {
			return nil, fmt.Errorf("gpu codec: %s: %w", key, err)
		}
		t.Name = key
		g = &Tensor{t: t, key: k, n: n, cat: cat, mem: mem, alloc: alloc}
	} else {
		// Encode into prev: its decode, queued before, has read it.
		if g.t.Codebook() != k.cb {
			if err := g.t.SetCodebook(k.cb); err != nil {
				return nil, err
			}
		}
		if err := g.t.GrowOverflow(k.ovRoom); err != nil {
			return nil, err
		}
	}
	g.settled, g.stats = false, nil
	g.win, g.histAt, g.mustFit = c.win, slot, false
	g.queued = true
	c.queue = append(c.queue, queuedEncode{g: g, src: dense(src, n), at: src})
	return g, nil
}

// key returns key's state, fitting its first codebook and layout to the
// sample of src as the reference codec does (which waits for the device
// once).
func (c *Codec) key(key string, src gpu.Ptr, n int, cc session.ClassCodec) (*keyState, error) {
	if k, ok := c.keys[key]; ok && k.cc == cc {
		return k, nil
	}
	if err := c.dev.AfterDefault(); err != nil {
		return nil, err
	}
	sample, err := c.dev.SampleHistogram(dense(src, n), n)
	if err != nil {
		return nil, fmt.Errorf("gpu codec: %s: %w", key, err)
	}
	k := c.keys[key]
	if k == nil {
		k = &keyState{}
		c.keys[key] = k
	}
	k.cc = cc
	k.cb = codec.FitCodebook(cc.Dist, &sample)
	k.layout = codec.ChooseLayout(cc.Preset, &k.cb, &sample).WithVersion(codec.FormatVersion2)
	return k, nil
}

// Forget drops what the codec remembers of stored tensors (codebooks,
// layouts, overflow room) and any encode still queued, so that the next run
// starts as a fresh codec would: the sweep's trials, each a new run at
// another length, do not depend on the trials before them.
func (c *Codec) Forget() {
	c.dropQueue()
	clear(c.keys)
}

// Decode writes the values of t to dst (queued; a corrupt tensor is
// reported by the settle of a window closed after it at the latest).
func (c *Codec) Decode(dst gpu.Ptr, t *Tensor) error {
	if t.ref != nil {
		return c.ref.decode(dst, t)
	}
	if err := c.flushFor(t); err != nil {
		return err
	}
	if err := c.timed("decode", []*Tensor{t}, func() error { return c.dev.Decode(dense(dst, t.n), t.t) }); err != nil {
		return err
	}
	return c.decodedInto(t, dst)
}

// DecodeBatch writes the values of ts[i] to dsts[i], in one launch.
func (c *Codec) DecodeBatch(dsts []gpu.Ptr, ts []*Tensor) error {
	if len(dsts) != len(ts) {
		return fmt.Errorf("gpu codec: decode batch of %d tensors into %d buffers", len(ts), len(dsts))
	}
	if c.dev == nil {
		for i, t := range ts {
			if err := c.ref.decode(dsts[i], t); err != nil {
				return err
			}
		}
		return nil
	}
	defer c.chargeDevice() // as in flush
	gts := make([]*gpu.Tensor, len(ts))
	bufs := make([]gpu.Buffer, len(ts))
	for i, t := range ts {
		if err := c.flushFor(t); err != nil {
			return err
		}
		gts[i], bufs[i] = t.t, dense(dsts[i], t.n)
	}
	if err := c.timed("decode batch", ts, func() error { return c.dev.DecodeBatch(bufs, gts) }); err != nil {
		return err
	}
	for i, t := range ts {
		if err := c.decodedInto(t, dsts[i]); err != nil {
			return err
		}
	}
	return nil
}

// decodedInto records the decode of g just queued into dsts: the side
// stream's point after it is g's last use, the views' last use by the side
// stream, and what Ready orders the trainer's use of the views after.
func (c *Codec) decodedInto(g *Tensor, dsts ...gpu.Ptr) error {
	pt, err := c.dev.Point()
	if err != nil || pt == 0 {
		return err
	}
	g.side = pt
	if c.decoded == nil {
		c.decoded = map[gpu.Ptr]uint64{}
	}
	for _, p := range dsts {
		g.mem.Touch(p, pt)
		c.decoded[p] = pt
	}
	return nil
}

// Ready orders the trainer's work queued from here after the decode into
// view p (see gpu/side.go): call it before the view's first use.
func (c *Codec) Ready(p gpu.Ptr) error {
	pt, ok := c.decoded[p]
	if !ok {
		return nil
	}
	delete(c.decoded, p)
	return c.dev.HoldDefault(pt)
}

// Hold makes the trainer's later work wait for the codec's side stream up
// to point: a block the side stream used, reused by the trainer.
func (c *Codec) Hold(point uint64) error { return c.dev.HoldDefault(point) }

// Free releases t's device memory. A queued encode of t is dropped, never
// launched.
func (c *Codec) Free(t *Tensor) {
	switch {
	case t.ref != nil:
		c.ref.free(t)
	case t.t != nil:
		setUp := t.queued
		c.unqueue(t)
		c.freeTensor(t, setUp)
		t.t = nil
	}
}

// freeTensor gives g's sections back, marked as used up to g's last use,
// or up to now when an encode into it was set up since (its queued launch
// dropped, but a new codebook's tables or a grown overflow buffer may have
// been queued on the side stream).
func (c *Codec) freeTensor(g *Tensor, setUp bool) {
	pt := g.side
	if p, err := c.dev.Point(); err == nil && setUp {
		pt = p
	}
	g.alloc.freeAfter(pt, func() { g.t.Free() }) // memory from a Memory: giving it back cannot fail
}

// usedWith records the side stream's point after the work queued so far
// as the last use of g and of the dense buffers ps.
func (c *Codec) usedWith(g *Tensor, ps ...gpu.Ptr) error {
	pt, err := c.dev.Point()
	if err != nil {
		return err
	}
	g.side = pt
	for _, p := range ps {
		g.mem.Touch(p, pt)
	}
	return nil
}

func dense(p gpu.Ptr, n int) gpu.Buffer { return gpu.External(p, 2*n) }
