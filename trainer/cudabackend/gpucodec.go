package cudabackend

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
)

// gpuCodec is a Codec that runs package gpu's kernels on the values where
// they lie: the trainer's device memory, reached through the one device
// layer (gpu.Ptr), the codec's work queued on gpu's side stream beside the
// trainer's and ordered against it by events (docs/cuda-trainer.md, "The
// side stream"). Its tensors' sections come from the run's Mem, so the
// ledger counts them.
//
// It keeps, per stored tensor (key), the codebook, layout and overflow room
// of its last encode, so that an encode in steady state queues its kernels
// and returns without waiting for the device:
//   - the first encode of a key fits a codebook to the sample histogram, as
//     HostCodec does (one wait), and writes the same bytes;
//   - Encode sets up the tensor and queues its launch in the codec: the
//     queue is flushed in one EncodeBatch (one launch of the encoder and
//     one of its overflow pass for all of them, instead of two or three
//     launches each, most of whose CTAs would idle) when the window closes
//     or when something needs a queued tensor's bytes first (a decode);
//     the store keeps the sources until the window's settle anyway;
//   - every encode also counts the exponent histogram of its values into
//     a device arena (in the same pass: EncodeBatch counts as it reads);
//     CloseWindow queues the copy of the window's
//     histograms and of the status words to the host, and SettleWindow,
//     one window later, keeps each tensor's histogram for its figures; the
//     key's next encode refits its codebook if it has drifted (see
//     refitSlack) and chooses the layout for that histogram;
//   - the overflow buffer has the room the key's recent encodes needed
//     plus headroom (overflowRoom); SettleWindow finds the encodes whose spill did not fit and
//     encodes them again from their sources, which the store keeps until
//     then.
//
// See docs/cuda-trainer.md, "The GPU codec".
type gpuCodec struct {
	dev   *gpu.Device
	keys  map[string]*gpuKey
	arena histArena
	win   int // the open window's number
	// Profile times every queued codec operation with device events (two
	// event records per operation); TakeDeviceTime returns the sum.
	Profile bool
	prof    codecProfile
	ovf     map[string]OverflowUse // settled encodes' overflow room and use (TakeOverflow)
	// queue holds the encodes set up and not yet launched (see flush).
	queue []queuedEncode
	// decoded holds, per view a decode wrote, the side stream's point
	// after it, until Ready orders the trainer's use after it.
	decoded map[gpu.Ptr]uint64
	// mem is the run the codec codes for, and charged what its device
	// holds for its own work (status words, batch tables, scratch) as
	// charged to that run's ledger.
	mem     *Mem
	charged int64
}

// chargeDevice brings the run's ledger up to date with what the device
// holds for the codec's own work, as codec scratch.
func (c *gpuCodec) chargeDevice() error {
	if c.mem == nil {
		return nil
	}
	now := c.dev.InUse()
	if err := c.mem.Charge(session.CodecScratch, now-c.charged); err != nil {
		return err
	}
	c.charged = now
	return nil
}

// queuedEncode is an encode set up by Encode and not yet launched.
type queuedEncode struct {
	g   *gpuTensor
	src gpu.Buffer
	at  gpu.Ptr // src's address
}

// flush launches the queued encodes in one batch, each counting its
// histogram into its slot of the arena (which may have grown since Encode
// took the slot: the address is taken now).
func (c *gpuCodec) flush() error {
	if len(c.queue) == 0 {
		return nil
	}
	defer c.chargeDevice() // the batch's tables may have grown; a failure shows at the next charge
	ts := make([]*gpu.Tensor, len(c.queue))
	srcs := make([]gpu.Buffer, len(c.queue))
	offs := make([]int, len(c.queue))
	for i, q := range c.queue {
		ts[i], srcs[i], offs[i] = q.g.t, q.src, q.g.histAt*histSlotBytes
		q.g.queued = false
	}
	qs := c.queue
	c.queue = c.queue[:0]
	a := &c.arena
	arena := gpu.External(a.buf, a.slots*histSlotBytes)
	gs := make([]*gpuTensor, len(qs))
	for i, q := range qs {
		gs[i] = q.g
	}
	if err := c.timed("encode batch", gs, func() error { return c.dev.EncodeBatch(ts, srcs, arena, offs) }); err != nil {
		return err
	}
	pt, err := c.dev.Point()
	if err != nil {
		return err
	}
	for _, q := range qs {
		q.g.side = pt
		q.g.mem.Touch(q.at, pt)
	}
	return nil
}

// unqueue drops g's queued encode, never launched: its values were
// replaced or released before the flush (the caller frees the source).
func (c *gpuCodec) unqueue(g *gpuTensor) {
	if !g.queued {
		return
	}
	for i, q := range c.queue {
		if q.g == g {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			break
		}
	}
	g.queued = false
}

// dropQueue drops every queued encode, never launched.
func (c *gpuCodec) dropQueue() {
	for _, q := range c.queue {
		q.g.queued = false
	}
	c.queue = c.queue[:0]
}

// Unqueue implements the store's unqueuer: t's pending encode is dropped
// (its source is about to be freed).
func (c *gpuCodec) Unqueue(t Compressed) {
	if g, ok := t.(*gpuTensor); ok {
		c.unqueue(g)
	}
}

// flushFor flushes the queue when one of ts is queued (its bytes are
// about to be read).
func (c *gpuCodec) flushFor(ts ...*gpuTensor) error {
	for _, g := range ts {
		if g != nil && g.queued {
			return c.flush()
		}
	}
	return nil
}

// SetProfile sets Profile (for callers that hold the codec as a Codec).
func (c *gpuCodec) SetProfile(on bool) { c.Profile = on }

// codecProfile times the codec's queued work with device events, read at
// the settle of the window they were queued in (when the device has
// finished it, so reading never waits), and adds it up by kind of work.
type codecProfile struct {
	free []*gpu.Timer
	used []timedOp
	ms   float64
	ops  map[string]CodecOpTime
}

// timedOp is one timed operation: its timer, kind and values coded.
type timedOp struct {
	t      *gpu.Timer
	kind   string
	values int
}

// opKind names a codec operation for the profile: what it does and the
// categories of the tensors it codes ("encode batch: activations").
func opKind(op string, gs []*gpuTensor) string {
	var cats []string
	for _, g := range gs {
		if c := g.cat.String(); !slices.Contains(cats, c) {
			cats = append(cats, c)
		}
	}
	slices.Sort(cats)
	return op + ": " + strings.Join(cats, "+")
}

// valuesOf is the number of values the tensors hold.
func valuesOf(gs []*gpuTensor) int {
	n := 0
	for _, g := range gs {
		n += g.n
	}
	return n
}

// timed runs run, after the trainer's work queued so far (its inputs: see
// side.go), between two event records when profiling, where op and the
// tensors it codes, gs, name it.
func (c *gpuCodec) timed(op string, gs []*gpuTensor, run func() error) error {
	if err := c.dev.AfterDefault(); err != nil {
		return err
	}
	if !c.Profile {
		return run()
	}
	var t *gpu.Timer
	if n := len(c.prof.free); n > 0 {
		t, c.prof.free = c.prof.free[n-1], c.prof.free[:n-1]
	} else {
		var err error
		if t, err = c.dev.NewTimer(); err != nil {
			return err
		}
	}
	if err := t.Start(); err != nil {
		return err
	}
	err := run()
	c.prof.used = append(c.prof.used, timedOp{t, opKind(op, gs), valuesOf(gs)})
	if serr := t.Stop(); serr != nil && err == nil {
		err = serr
	}
	return err
}

// collect adds up timers of a settled window (their work is done).
func (c *gpuCodec) collect(timers []timedOp) error {
	for _, o := range timers {
		ms, err := o.t.Ms()
		if err != nil {
			return err
		}
		c.prof.ms += ms
		if c.prof.ops == nil {
			c.prof.ops = map[string]CodecOpTime{}
		}
		k := c.prof.ops[o.kind]
		k.Launches++
		k.Ms += ms
		k.MValues += float64(o.values) / 1e6
		c.prof.ops[o.kind] = k
		c.prof.free = append(c.prof.free, o.t)
	}
	return nil
}

// TakeDeviceTime returns the device time of the codec's operations settled
// since the last call (0 unless Profile is set).
func (c *gpuCodec) TakeDeviceTime() time.Duration {
	d := time.Duration(c.prof.ms * float64(time.Millisecond))
	c.prof.ms = 0
	return d
}

// TakeOpTimes returns the device time of the codec's operations settled
// since the last call by kind (nil unless Profile is set).
func (c *gpuCodec) TakeOpTimes() map[string]CodecOpTime {
	ops := c.prof.ops
	c.prof.ops = nil
	return ops
}

// gpuKey is what the codec remembers of one stored tensor.
type gpuKey struct {
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

// overflowRoom is the overflow room a key's next encode gets after one
// that needed need bytes: an eighth and 1 KiB above that, or, where the
// room before was larger, that room less a sixteenth. A spill that moves
// from step to step (an activation's, a state's) so keeps room for its
// recent largest, instead of being encoded again at the settle whenever it
// grows past the last one; a room no longer needed shrinks within a few
// dozen encodes.
func overflowRoom(prev, need int) int { return max(need+need/8+1024, prev-prev/16) }

// countOverflow adds a settled encode's overflow room and use to the
// step's figures by category.
func (c *gpuCodec) countOverflow(g *gpuTensor, used int) {
	if c.ovf == nil {
		c.ovf = map[string]OverflowUse{}
	}
	o := c.ovf[g.cat.String()]
	o.Encodes++
	o.RoomBytes += int64(g.t.OverflowCap())
	o.UsedBytes += int64(used)
	c.ovf[g.cat.String()] = o
}

// TakeOverflow returns the overflow room and use of the encodes settled
// since the last call, by category.
func (c *gpuCodec) TakeOverflow() map[string]OverflowUse {
	o := c.ovf
	c.ovf = nil
	return o
}

// refitSlack is how much worse, in bits per exponent under the latest
// histogram, a key's codebook may be than a fresh fit before it is
// refitted: a new codebook costs an upload of its tables (queued, no wait)
// and, when the layout changes, a new tensor. Refits fit to the full
// histogram, not the sample: the device counts it anyway for the figures.
const refitSlack = 0.02

// newGPUCodec returns a codec on d, which must be the GPU (or emulation)
// the trainer's Device runs on.
func newGPUCodec(d *gpu.Device) *gpuCodec {
	return &gpuCodec{dev: d, keys: map[string]*gpuKey{}}
}

// Forget drops what the codec remembers of stored tensors (codebooks,
// layouts, overflow room) and any encode still queued, so that the next run
// starts as a fresh codec would: the sweep's trials, each a new run at
// another length, do not depend on the trials before them.
func (c *gpuCodec) Forget() {
	c.dropQueue()
	clear(c.keys)
}

// gpuTensor is one compressed tensor: a gpu.Tensor whose sections are
// allocations of the run's Mem.
type gpuTensor struct {
	t       *gpu.Tensor
	key     *gpuKey
	n       int
	settled bool
	hist    codec.Histogram // of the values encoded, read at the settle
	stats   *codec.Stats    // computed on first use
	cat     session.Category
	// The pending encode: the window it belongs to, its histogram's slot in
	// that window's arena (-1: none to read, the histogram is known or not
	// counted), and whether it was encoded again into the room its spill
	// needed (so it must fit now).
	win     int
	histAt  int
	mustFit bool
	// queued: the encode is in the codec's queue, not launched yet.
	queued bool
	// mem is the run whose memory holds it; side the side stream's point
	// after the last work that used it.
	mem  *Mem
	side uint64
}

func (g *gpuTensor) Settled() bool            { return g.settled }
func (g *gpuTensor) Bytes() int64             { return int64(g.t.StoredBytes()) }
func (g *gpuTensor) Codebook() codec.Codebook { return g.t.Codebook() }
func (g *gpuTensor) Layout() codec.Layout     { return g.t.Layout() }

func (g *gpuTensor) Stats() (codec.Stats, error) {
	if !g.settled {
		return codec.Stats{}, fmt.Errorf("%s: figures asked before its encode was settled", g.t.Name)
	}
	if g.stats == nil {
		s, err := g.t.Stats(g.hist)
		if err != nil {
			return s, err
		}
		g.stats = &s
	}
	return *g.stats, nil
}

// memAlloc gives a tensor's sections from a run's Mem: the encoded
// sections in the stored tensor's category, the overflow buffer in
// OverflowPool, the encoder's tables and scratch in CodecScratch. Only the
// codec's side stream uses them: a block it takes is ordered after the
// trainer's work queued so far (the block's last users), and one it gives
// back is marked as used up to the side stream's point then.
type memAlloc struct {
	mem *Mem
}

func (c *gpuCodec) sideAlloc(mem *Mem) memAlloc {
	return memAlloc{mem: mem}
}

func (a memAlloc) Alloc(bytes int, c session.Category) (gpu.Ptr, error) {
	return a.mem.AllocSide(c, int64(bytes)) // gpu orders its use after the trainer's
}

func (a memAlloc) Free(p gpu.Ptr, _ session.Category) { a.mem.Free(p) }

// FreeAfter implements gpu.SideAllocator: a tensor's release knows its
// last use (freeTag); otherwise the side stream's point now covers it.
func (a memAlloc) FreeAfter(p gpu.Ptr, _ session.Category, point uint64) {
	if a.mem.freeTag == 0 {
		a.mem.Touch(p, point)
	}
	a.mem.Free(p)
}

func dense(p gpu.Ptr, n int) gpu.Buffer { return gpu.External(p, 2*n) }

// Encode implements Codec.
func (c *gpuCodec) Encode(mem *Mem, key string, cat session.Category, src gpu.Ptr, n int, cc session.ClassCodec, prev Compressed) (Compressed, error) {
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
	g, _ := prev.(*gpuTensor)
	if g != nil {
		// A queued encode of prev is replaced by this one (the store has
		// dropped it already; this keeps a batch from holding it twice).
		c.unqueue(g)
	}
	if c.arena.mem != mem {
		// Another run: the last one's step settles launched its queue
		// unless it failed, and then its encodes, into memory its Mem has
		// taken back, must not run.
		c.dropQueue()
	}
	slot, err := c.arena.take(mem, c.dev)
	if err != nil {
		return nil, err
	}
	if g == nil || g.t.N() != n || g.t.Layout() != k.layout || g.t.OverflowCap() > k.ovRoom+k.ovRoom/4+4096 {
		// A new tensor: none yet, another layout, or far more overflow
		// room than the key needs.
		t, err := c.dev.NewTensorIn(c.sideAlloc(mem), n, k.layout, k.cb, k.ovRoom, cat)
		if err != nil {
			return nil, fmt.Errorf("gpu codec: %s: %w", key, err)
		}
		t.Name = key
		g = &gpuTensor{t: t, key: k, n: n, cat: cat, mem: mem}
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
// sample of src as HostCodec does (which waits for the device once).
func (c *gpuCodec) key(key string, src gpu.Ptr, n int, cc session.ClassCodec) (*gpuKey, error) {
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
		k = &gpuKey{}
		c.keys[key] = k
	}
	k.cc = cc
	k.cb = codec.FitCodebook(cc.Dist, &sample)
	k.layout = codec.ChooseLayout(cc.Preset, &k.cb, &sample)
	return k, nil
}

// gpuWindow is a closed window: the read-back of its status words and
// histograms, queued behind its work, and the profile timers of its work.
type gpuWindow struct {
	num    int
	read   *gpu.StatusRead
	timers []timedOp
}

// CloseWindow implements Codec: it queues the copy of every tensor's
// status words and of the histograms the window's encodes counted into
// pinned host memory, behind the work queued so far, and starts the next
// window (whose encodes count into the arena from its first slot again:
// the copy is queued before them).
func (c *gpuCodec) CloseWindow(mem *Mem) (CodecWindow, error) {
	if err := c.flush(); err != nil {
		return nil, fmt.Errorf("gpu codec: %w", err)
	}
	a := &c.arena
	var extra gpu.Buffer
	used := 0
	if a.mem == mem && a.buf != 0 {
		extra = gpu.External(a.buf, a.slots*histSlotBytes)
		used = a.used
	}
	r, err := c.dev.QueueStatusRead(extra, used*histSlotBytes)
	if err != nil {
		return nil, fmt.Errorf("gpu codec: %w", err)
	}
	w := &gpuWindow{num: c.win, read: r, timers: c.prof.used}
	c.prof.used = nil
	c.win++
	a.used = 0
	return w, nil
}

// SettleWindow implements Codec. It waits for w's read-back (the device
// keeps running the work queued since), then, for each encode of pend: the
// histogram first, so that a tensor whose code was stale is encoded again
// with a fitted codebook, not again with the stale one; then the overflow:
// an encode whose spill did not fit is encoded again from its source into
// the room it needed. Those encodes are pending in the open window, checked at its
// settle; one that was given the room it needed and still did not fit is
// an error.
func (c *gpuCodec) SettleWindow(mem *Mem, cw CodecWindow, pend []Pending) ([]int, error) {
	w, ok := cw.(*gpuWindow)
	if !ok || w == nil {
		return nil, fmt.Errorf("gpu codec: cannot settle a window of %T", cw)
	}
	defer w.read.Release()
	if err := w.read.Wait(); err != nil {
		return nil, fmt.Errorf("gpu codec: %w", err)
	}
	if err := c.collect(w.timers); err != nil {
		return nil, err
	}
	hists := w.read.Extra()
	ts := make([]*gpuTensor, len(pend))
	for i, p := range pend {
		g, ok := p.T.(*gpuTensor)
		if !ok {
			return nil, fmt.Errorf("gpu codec: cannot settle a %T", p.T)
		}
		switch {
		case g.t == nil:
			return nil, fmt.Errorf("gpu codec: settling a freed tensor")
		case g.settled || g.win != w.num:
			return nil, fmt.Errorf("gpu codec: %s: settling window %d, the tensor's encode is of window %d (settled: %v)", g.t.Name, w.num, g.win, g.settled)
		}
		if g.histAt >= 0 && (g.histAt+1)*histSlotBytes > len(hists) {
			return nil, fmt.Errorf("gpu codec: %s: histogram slot %d, the window read %d bytes", g.t.Name, g.histAt, len(hists))
		}
		ts[i] = g
	}
	again := make([]bool, len(pend))
	for i, g := range ts {
		if g.histAt >= 0 {
			// The encode's first settle: its histogram.
			g.hist, g.histAt = histAt(hists, g.histAt), -1
			g.key.hist, g.key.toCheck = g.hist, true
			// Cheap test here (a code costs at least the entropy); the fit
			// itself waits for the next encode, unless the code is stale.
			cb := g.t.Codebook()
			if cb.ExpectedBits(&g.hist) > g.hist.Entropy()+staleBits {
				if err := c.recode(mem, g, pend[i].Src); err != nil {
					return nil, err
				}
				again[i] = true
				continue
			}
			startRefit(g.key)
		}
		need := g.t.OverflowLen()
		c.countOverflow(g, need)
		g.key.ovRoom = overflowRoom(g.key.ovRoom, need)
		if !g.t.Overflowed() {
			continue
		}
		if g.mustFit {
			return nil, fmt.Errorf("gpu codec: %s: encoded again into %d bytes of overflow room, needed %d", g.t.Name, g.t.OverflowCap(), need)
		}
		if err := g.t.GrowOverflow(g.key.ovRoom); err != nil {
			return nil, fmt.Errorf("gpu codec: %s: %w", g.t.Name, err)
		}
		if err := c.timed("encode again", []*gpuTensor{g}, func() error { return c.dev.Encode(g.t, dense(pend[i].Src, g.n)) }); err != nil {
			return nil, err
		}
		if err := c.usedWith(g, pend[i].Src); err != nil {
			return nil, err
		}
		g.mustFit, again[i] = true, true
	}
	var out []int
	for i, g := range ts {
		if again[i] {
			g.win = c.win
			out = append(out, i)
			continue
		}
		g.settled = true
	}
	return out, nil
}

// recode encodes g again from src, its values, with a codebook fitted to
// them, into a new tensor: its code was stale (an optimizer state's first
// encodes after its zeros, whose values move by whole exponents from step
// to step). The new tensor starts with no overflow room (the stale one's was
// sized for a spill of nearly every value): the settle of the open window
// finds the room it needs.
func (c *gpuCodec) recode(mem *Mem, g *gpuTensor, src gpu.Ptr) error {
	k := g.key
	c.refit(k, &g.hist)
	k.toCheck = false
	t, err := c.dev.NewTensorIn(c.sideAlloc(mem), g.n, k.layout, k.cb, 0, g.cat)
	if err != nil {
		return fmt.Errorf("gpu codec: %s: %w", g.t.Name, err)
	}
	t.Name = g.t.Name
	c.freeTensor(g, false)
	g.t, g.stats, g.mustFit = t, nil, false
	if err := c.timed("encode with a new code", []*gpuTensor{g}, func() error { return c.dev.Encode(g.t, dense(src, g.n)) }); err != nil {
		return err
	}
	return c.usedWith(g, src)
}

// usedWith records the side stream's point after the work queued so far
// as the last use of g and of the dense buffers ps.
func (c *gpuCodec) usedWith(g *gpuTensor, ps ...gpu.Ptr) error {
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

// freeTensor gives g's sections back, marked as used up to g's last use,
// or up to now when an encode into it was set up since (its queued launch
// dropped, but a new codebook's tables or a grown overflow buffer may have
// been queued on the side stream).
func (c *gpuCodec) freeTensor(g *gpuTensor, setUp bool) {
	pt := g.side
	if p, err := c.dev.Point(); err == nil && setUp {
		pt = p
	}
	g.mem.freeTagged(pt, func() { g.t.Free() }) // memory from a Mem: giving it back cannot fail
}

// Settle settles pend, encoded in the open window, at once: it closes the
// window and settles it, and the windows of what it encodes again, until
// every encode is complete (a wait each).
func (c *gpuCodec) Settle(mem *Mem, pend []Pending) error { return settleCodec(c, mem, pend) }

// staleBits: a codebook costing this much above the entropy of the values
// it coded was fitted to other values (a good fit costs a few hundredths of
// a bit above it; one fitted to a state's zeros, several bits).
const staleBits = 1.0

// refit gives k a new codebook when its own costs more than refitSlack bits
// per exponent above a fresh fit to h, and the layout h calls for with it
// (the stream size follows the cost of the values, codebook or not).
func (c *gpuCodec) refit(k *gpuKey, h *codec.Histogram) {
	k.job = nil
	cb, lay, ok := refitted(k.cb, k.cc, h)
	applyRefit(k, cb, lay, ok)
}

// Decode implements Codec.
func (c *gpuCodec) Decode(dst gpu.Ptr, t Compressed) error {
	g, ok := t.(*gpuTensor)
	if !ok {
		return fmt.Errorf("gpu codec: cannot decode a %T", t)
	}
	if err := c.flushFor(g); err != nil {
		return err
	}
	if err := c.timed("decode", []*gpuTensor{g}, func() error { return c.dev.Decode(dense(dst, g.n), g.t) }); err != nil {
		return err
	}
	return c.decodedInto(g, dst)
}

// decodedInto records the decode of g just queued into dsts: the side
// stream's point after it is g's last use, the views' last use by the side
// stream, and what Ready orders the trainer's use of the views after.
func (c *gpuCodec) decodedInto(g *gpuTensor, dsts ...gpu.Ptr) error {
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

// Ready implements the store's readier: the trainer's work queued from
// here waits for the decode into view p (see side.go).
func (c *gpuCodec) Ready(p gpu.Ptr) error {
	pt, ok := c.decoded[p]
	if !ok {
		return nil
	}
	delete(c.decoded, p)
	return c.dev.HoldDefault(pt)
}

// Hold implements the pool's sideFence.
func (c *gpuCodec) Hold(point uint64) error { return c.dev.HoldDefault(point) }

// DecodeBatch implements the store's batchDecoder: ts[i] into dsts[i], in
// one launch.
func (c *gpuCodec) DecodeBatch(dsts []gpu.Ptr, ts []Compressed) error {
	if len(dsts) != len(ts) {
		return fmt.Errorf("gpu codec: decode batch of %d tensors into %d buffers", len(ts), len(dsts))
	}
	defer c.chargeDevice() // as in flush
	gts := make([]*gpu.Tensor, len(ts))
	bufs := make([]gpu.Buffer, len(ts))
	gs := make([]*gpuTensor, len(ts))
	for i, t := range ts {
		g, ok := t.(*gpuTensor)
		if !ok {
			return fmt.Errorf("gpu codec: cannot decode a %T", t)
		}
		if err := c.flushFor(g); err != nil {
			return err
		}
		gts[i], bufs[i], gs[i] = g.t, dense(dsts[i], g.n), g
	}
	if err := c.timed("decode batch", gs, func() error { return c.dev.DecodeBatch(bufs, gts) }); err != nil {
		return err
	}
	for i, t := range ts {
		if err := c.decodedInto(t.(*gpuTensor), dsts[i]); err != nil {
			return err
		}
	}
	return nil
}

// Free implements Codec. A queued encode of t is dropped, never launched.
func (c *gpuCodec) Free(_ *Mem, t Compressed) {
	if g, ok := t.(*gpuTensor); ok && g.t != nil {
		setUp := g.queued
		c.unqueue(g)
		c.freeTensor(g, setUp)
		g.t = nil
	}
}

// histArena holds the exponent histograms (256 uint64 each) the open
// window's encodes count, one slot per encode from the first, in one device
// buffer of the run's Mem (codec scratch), so that CloseWindow reads them
// in one copy. The next window reuses the slots: its counts are queued
// after the copy.
type histArena struct {
	mem   *Mem // the run it belongs to (a codec may serve several in turn)
	buf   gpu.Ptr
	slots int
	used  int // slots the open window took
}

const histSlotBytes = gpu.HistogramBytes

// take returns the open window's next slot, growing the arena (and keeping
// the window's counts) when it is full.
func (a *histArena) take(mem *Mem, dev *gpu.Device) (int, error) {
	if a.mem != mem {
		// Another run: the last one's arena went with its memory.
		*a = histArena{mem: mem}
	}
	if a.used == a.slots {
		n := max(64, 2*a.slots)
		p, err := mem.AllocSide(session.CodecScratch, int64(n*histSlotBytes))
		if err != nil {
			return 0, err
		}
		if err := dev.AfterDefault(); err != nil {
			mem.Free(p)
			return 0, err
		}
		if a.buf != 0 {
			bytes := a.used * histSlotBytes
			if err := dev.CopyBuffer(gpu.External(p, bytes), gpu.External(a.buf, bytes), bytes); err != nil {
				mem.Free(p)
				return 0, err
			}
			pt, err := dev.Point()
			if err != nil {
				mem.Free(p)
				return 0, err
			}
			mem.Touch(a.buf, pt)
			mem.Free(a.buf)
		}
		a.buf, a.slots = p, n
	}
	a.used++
	return a.used - 1, nil
}

// histAt is histogram i of a window's arena read back.
func histAt(b []byte, i int) (full codec.Histogram) {
	b = b[i*histSlotBytes:]
	for e := range 256 {
		full[e] = binary.LittleEndian.Uint64(b[8*e:])
	}
	return full
}
