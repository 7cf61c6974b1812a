package cudabackend

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"lcttop/gpu"
	"lcttop/gpu/gptkernel"
	"lcttop/gpu/lct"
	"lcttop/session"
	"lcttop/trainer"
)

// LCTOptions asks for the LCT run beside the shadow.
type LCTOptions struct {
	// Codec compresses the LCT run's tensors (nil: the reference codec,
	// lct.NewReference; OpenCodec gives the GPU's).
	Codec *lct.Codec
	// Window is the dense bytes of one window of encodes, settled when the
	// next window closes (0: an eighth of the parameters' bytes, within
	// 128 KiB..16 MiB); see docs/cuda-trainer.md, "Syncs".
	Window int64
	// Classes is the codec setting per tensor class (nil:
	// trainer.DefaultClassCodec).
	Classes map[session.TensorClass]session.ClassCodec
	// Alone trains the LCT run without the shadow beside it, to measure
	// its memory by itself: nothing is compared.
	Alone bool
	// CopyFloor, instead of compressing, keeps the run dense and copies
	// the bytes a codec must move wherever it would code (copyFloorStore):
	// the step time floor of an unfused codec. Codec is then unused.
	CopyFloor bool
	// CopyBeside, with CopyFloor, runs the copies beside the trainer's
	// work (nil: on its stream).
	CopyBeside CopyStream
	// PeakSlack is how many bytes past the peak it has recorded the LCT
	// run may go before it waits for its pending encodes to free their
	// sources (0: none; a measurement of what the waits cost).
	PeakSlack int64
}

// lockstep trains on one GPU: the dense shadow run and, when asked for, the
// LCT run, in lockstep on the same batches, both drawing device memory from
// one pool while each keeps its own ledger. With LCTOptions.Alone there is
// no shadow run (Shadow is nil).
type lockstep struct {
	dev    Device
	pool   *devicePool
	Shadow *modelRun
	LCT    *modelRun // nil without LCTOptions
}

// newLockstep sets up the runs of cfg on dev (not taking ownership of dev) from the
// starting values vals; opts, if not nil, adds the LCT run.
func newLockstep(dev Device, cfg Config, vals map[string][]uint16, opts *LCTOptions) (*lockstep, error) {
	b := &lockstep{dev: dev, pool: newDevicePool(dev)}
	b.pool.trace = cfg.PoolTrace
	var err error
	if opts == nil || !opts.Alone {
		if b.Shadow, err = newLoadedRun(b.pool, "shadow", cfg, vals, nil); err != nil {
			b.Close()
			return nil, err
		}
	}
	if opts != nil {
		if b.LCT, err = newLoadedRun(b.pool, "lct", cfg, vals, opts); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// newLoadedRun makes a run with its own ledger on pool, dense (opts nil) or
// LCT, loads vals and starts its peak from there.
func newLoadedRun(pool *devicePool, name string, cfg Config, vals map[string][]uint16, opts *LCTOptions) (*modelRun, error) {
	mem := newRunMem(pool, cfg.Budget)
	dense := &denseStore{mem: mem, ops: newGPTOps(mem)}
	var st store = dense
	var ls *lctStore
	var floor *copyFloorStore
	switch {
	case opts != nil && opts.CopyFloor:
		floor = &copyFloorStore{denseStore: dense, rawBelow: smallParamLimit(cfg.Model), beside: opts.CopyBeside, views: map[gpu.Ptr]uint64{}}
		st = floor
	case opts != nil:
		c, classes := opts.Codec, opts.Classes
		if c == nil {
			c = lct.NewReference()
		}
		if classes == nil {
			classes = trainer.DefaultClassCodec
		}
		window := opts.Window
		if window == 0 {
			window = defaultWindow(cfg.Model)
		}
		var err error
		if ls, err = newLCTStore(mem, c, classes, window); err != nil {
			return nil, err
		}
		if c.OnDevice() {
			pool.SetFence(c)
		}
		ls.rawBelow = smallParamLimit(cfg.Model)
		ls.slack = opts.PeakSlack
		st = ls
	}
	r, err := newRun(name, cfg, mem, st)
	if err != nil {
		return nil, err
	}
	r.lct, r.floor = ls, floor
	if err := r.Load(vals); err != nil {
		r.Close()
		return nil, fmt.Errorf("%s run: %w", name, err)
	}
	r.ResetPeak()
	return r, nil
}

// Device is the GPU the backend trains on.
func (b *lockstep) Device() Device { return b.dev }

// Pool is the device memory the runs draw on.
func (b *lockstep) Pool() *devicePool { return b.pool }

// stepResult is one lockstep step of both runs.
type stepResult struct {
	Step                int
	LossShadow, LossLCT float32
	TimeShadow, TimeLCT time.Duration
	// PartsShadow and PartsLCT are the host's time in each part of each
	// run's step (stepParts).
	PartsShadow, PartsLCT  stepParts
	BitIdentical           bool                       // the losses' bits agree (true when there is no LCT run)
	CodecTime              time.Duration              // the LCT run's encoding and decoding (host time: launches and waits)
	Settles                int                        // the LCT run's settled windows of encodes (waits for the work of one window)
	SettleWait             time.Duration              // the host's time blocked in those waits
	RelieveTime            time.Duration              // the host's time where the LCT run settled near its peak
	WindowTime             time.Duration              // and where a full window settled the one before it
	Drains                 int                        // the LCT run's full settles (waits for all the queued work: the step's end)
	SourceReads            int                        // the LCT run's reads of pending tensors, copied from their kept sources
	EncodedAgain           int                        // the LCT run's encodes made again at a settle (a spill that did not fit its room, a stale code)
	Decodes, DecodeBatches int                        // the LCT run's decode launches: single tensors, batches
	CodecDeviceTime        time.Duration              // device time of the codec's kernels (the GPU codec, profiling; else 0)
	CodecOps               map[string]lct.OpTime      // CodecDeviceTime by kind of operation
	Overflow               map[string]lct.OverflowUse // the LCT run's overflow room and use by category (the GPU codec)
	FloorCopies            int                        // the copy floor's copies (LCTOptions.CopyFloor)
	FloorCopyBytes         int64                      // and the bytes they read and wrote
	PeakShadow, PeakLCT    int64
	PoolHeld, PoolHeldPeak int64 // device memory the pool holds for both runs
	PoolAllocs             int   // device allocations the pool made during the step (its cache missed)
}

// Step trains both runs on batch for step (from 1).
func (b *lockstep) Step(batch *trainer.Batch, step int) (stepResult, error) {
	res := stepResult{Step: step, BitIdentical: true}
	allocs := b.pool.Allocs()
	var err error
	if b.Shadow != nil {
		res.LossShadow, res.TimeShadow, err = b.Shadow.TrainStep(batch.Tokens, batch.Targets, step)
		if err != nil {
			return res, err
		}
		res.PeakShadow = b.Shadow.Memory().PeakTotal
		res.PartsShadow = b.Shadow.parts
	}
	if b.LCT != nil {
		switch {
		case b.LCT.lct != nil:
			res.LossLCT, res.TimeLCT, err = b.stepLCT(b.LCT.lct, &res, batch, step)
		case b.LCT.floor != nil:
			res.LossLCT, res.TimeLCT, err = b.LCT.TrainStep(batch.Tokens, batch.Targets, step)
			res.FloorCopies, res.FloorCopyBytes = b.LCT.floor.takeCopies()
		default:
			err = fmt.Errorf("LCT run: store %T", b.LCT.st)
		}
		if err != nil {
			return res, err
		}
		res.BitIdentical = b.Shadow == nil || math.Float32bits(res.LossLCT) == math.Float32bits(res.LossShadow)
		res.PeakLCT = b.LCT.Memory().PeakTotal
		res.PartsLCT = b.LCT.parts
	}
	if err := b.pool.TrimUnused(); err != nil {
		return res, err
	}
	res.PoolHeld, res.PoolHeldPeak = b.pool.Held()
	res.PoolAllocs = b.pool.Allocs() - allocs
	return res, nil
}

// stepLCT trains the LCT run of ls for step and records its codec's
// figures in res.
func (b *lockstep) stepLCT(ls *lctStore, res *stepResult, batch *trainer.Batch, step int) (float32, time.Duration, error) {
	ls.clock = codecClock{}
	loss, took, err := b.LCT.TrainStep(batch.Tokens, batch.Targets, step)
	res.CodecTime = ls.clock.encode + ls.clock.decode
	res.Settles, res.Drains, res.SourceReads = ls.clock.settles, ls.clock.drains, ls.clock.sourceReads
	res.EncodedAgain = ls.clock.again
	res.RelieveTime, res.WindowTime = ls.clock.relieve, ls.clock.window
	res.Decodes, res.DecodeBatches = ls.clock.decodes, ls.clock.decodeBatches
	f := ls.codec.TakeFigures()
	res.CodecDeviceTime, res.CodecOps, res.Overflow, res.SettleWait = f.DeviceTime, f.Ops, f.Overflow, f.SettleWait
	return loss, took, err
}

// CheckWeights compares every parameter and optimizer state of the LCT run,
// decoded, with the shadow's, and returns the first difference ("" when
// identical, or when there is no LCT run).
func (b *lockstep) CheckWeights() (string, error) {
	if b.LCT == nil || b.Shadow == nil {
		return "", nil
	}
	// Compared on the device, each tensor's first differing index into a
	// slot of its own, read back once: nothing but the verdict crosses to
	// the host.
	want, got := b.Shadow.slots(), b.LCT.slots()
	firsts, err := b.LCT.mem.Alloc(session.CodecScratch, 8*int64(len(want)))
	if err != nil {
		return "", err
	}
	defer b.LCT.mem.Free(firsts)
	if err := b.dev.Memset(firsts, 0xFF, 8*int64(len(want))); err != nil {
		return "", err
	}
	for i, s := range want {
		if err := b.compareOnDevice(firsts.Add(8*int64(i)), s, got[i]); err != nil {
			return "", err
		}
	}
	raw := make([]byte, 8*len(want))
	if err := b.dev.Download(raw, firsts); err != nil {
		return "", err
	}
	// A corrupt tensor shows in the status the codec reads.
	if err := b.LCT.st.settle(); err != nil {
		return "", err
	}
	for i := range want {
		at := binary.LittleEndian.Uint64(raw[8*i:])
		if at == ^uint64(0) {
			continue
		}
		// The two values, read for the message only.
		w, err := b.Shadow.st.get(want[i])
		if err != nil {
			return "", err
		}
		g, err := b.LCT.st.get(got[i])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s[%d] = %#04x (LCT) vs %#04x (shadow)", want[i].name, at, g[at], w[at]), nil
	}
	return "", nil
}

// compareOnDevice queues the comparison of the shadow's tensor s with the
// LCT run's l, the first index where they differ into *first.
func (b *lockstep) compareOnDevice(first gpu.Ptr, s, l *slot) error {
	if s.name != l.name || s.n != l.n {
		return fmt.Errorf("the runs' tensors differ in order: %s (%d values) vs %s (%d)", s.name, s.n, l.name, l.n)
	}
	a := b.Shadow.read(s)
	v := b.LCT.read(l)
	if b.Shadow.err == nil && b.LCT.err == nil {
		b.LCT.keep(gptkernel.FirstMismatch(b.dev, gridFor(int64(s.n), elemThreads), elemThreads, first, a, v, int64(s.n)))
	}
	b.Shadow.done(s, a)
	b.LCT.done(l, v)
	for _, r := range []*modelRun{b.Shadow, b.LCT} {
		if r.err != nil {
			err := r.err
			r.err = nil
			return err
		}
	}
	return nil
}

// Tensors reports the LCT run's stored tensors (nil without it).
func (b *lockstep) Tensors() ([]session.TensorStats, error) {
	if b.LCT == nil {
		return nil, nil
	}
	ls := b.LCT.lct
	if ls == nil {
		return nil, nil // the copy floor: nothing compressed
	}
	var slots []*slot
	for _, p := range b.LCT.params {
		slots = append(append(slots, p.w), p.state...)
	}
	raw, err := ls.rawValues(slots)
	if err != nil {
		return nil, err
	}
	var out []session.TensorStats
	for _, s := range slots {
		ts, ok, err := ls.tensorStats(s, raw)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, ts)
		}
	}
	return out, nil
}

// Close frees the runs' memory (the device stays open).
func (b *lockstep) Close() error {
	for _, r := range []*modelRun{b.Shadow, b.LCT} {
		if r != nil {
			r.Close()
		}
	}
	return b.pool.Trim()
}

// Snapshot turns a step's result into the trainer's Snapshot, as the UI and
// the headless mode show it: both losses, the verdict, times, memory by
// category for both runs and the LCT run's tensors. valLoss and mismatch
// (the first difference found, "" if none) come from the caller's loop.
func (b *lockstep) Snapshot(res stepResult, model, optimizer string, valLoss float32, mismatch string) (session.Snapshot, error) {
	tensors, err := b.Tensors()
	if err != nil {
		return session.Snapshot{}, fmt.Errorf("LCT tensor figures: %w", err)
	}
	s := session.Snapshot{
		Step: res.Step, Time: time.Now(), Backend: "cuda", Model: model, Optimizer: optimizer,
		LossShadow: res.LossShadow, LossLCT: res.LossLCT, ValLoss: valLoss,
		BitIdentical: b.LCT != nil && mismatch == "", Mismatch: mismatch,
		StepTimeShadow: res.TimeShadow, StepTimeLCT: res.TimeLCT, CodecTime: res.CodecTime,
		PeakBytesShadow: res.PeakShadow,
		Tensors:         tensors,
	}
	if b.Shadow != nil {
		s.MemShadow = b.Shadow.Memory()
	}
	if b.LCT != nil {
		s.MemLCT, s.PeakBytesLCT = b.LCT.Memory(), res.PeakLCT
	} else {
		s.Mismatch = "no LCT run"
	}
	return s, nil
}
