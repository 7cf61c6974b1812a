// Package trainer trains a byte-level GPT twice in lockstep: once with its
// weights, optimizer states and saved activations compressed through the LCT
// codec, once uncompressed (the shadow). Both runs take the same steps on
// the same batches; the trainer proves at every step that their losses are
// bit-identical (and every CheckEvery steps all weights and states), while
// it measures how much less memory the compressed run needs. After each step
// it emits a session.Snapshot: what the UI and the headless mode show.
package trainer

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sync"
	"time"

	"lcttop/session"
	"lcttop/trainer/internal/par"
)

// The CPU trainer is a session.Session.
var _ session.Session = (*Trainer)(nil)

// Trainer runs the two trainings. Its controls may be called from any
// goroutine while Run trains on another.
type Trainer struct {
	cfg    resolved
	data   *Dataset
	val    []*Batch
	shadow *run
	lct    *run

	mu             sync.Mutex // held through a step and whatever reads the runs
	step           int        // steps completed
	identical      bool
	mismatch       string
	weightsChecked int
	valLoss        float32
	valStep        int // the step valLoss was measured after
	last           session.Snapshot
	finalSaved     int // step of the last checkpoint FinalCheckpoint wrote

	ctl      sync.Mutex
	paused   bool
	stepOnce int
	stopped  bool
	done     bool                                       // HoldAtEnd: the steps are done, Run waits for Stop
	desired  map[session.TensorClass]session.ClassCodec // what the controls asked for
	pending  map[session.TensorClass]session.ClassCodec // asked for, not applied yet
	// Per-tensor overrides: asked for, and not applied yet (the zero
	// ClassCodec removes one).
	tensorDesired map[string]session.ClassCodec
	// tensorPending holds the tensor overrides asked for since the last
	// step boundary: the codec, or nil where the tensor goes back to its
	// class's.
	tensorPending map[string]*session.ClassCodec
	names         map[string]bool // every tensor the LCT run stores
	wake          chan struct{}
	snaps         chan session.Snapshot
}

// New checks cfg, loads the data, and sets up both runs from the seed (or
// from cfg.ResumePath). Errors are one line naming what is wrong.
func New(cfg Config) (*Trainer, error) {
	rc, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if rc.CheckpointPath != "" {
		if err := checkCheckpointPath(rc.CheckpointPath); err != nil {
			return nil, err
		}
	}
	data, err := LoadData(rc.DataPath, rc.SeqLen)
	if err != nil {
		return nil, err
	}
	opt, err := newOptimizer(rc.Optimizer, rc.LR, rc.Warmup)
	if err != nil {
		return nil, err
	}
	t := &Trainer{
		cfg: rc, data: data, identical: true,
		desired: maps.Clone(rc.Codec), pending: map[session.TensorClass]session.ClassCodec{},
		tensorDesired: map[string]session.ClassCodec{}, tensorPending: map[string]*session.ClassCodec{}, names: map[string]bool{},
		wake: make(chan struct{}, 1), snaps: make(chan session.Snapshot, 1),
	}
	if rc.ValBatches > 0 {
		t.val = data.ValBatches(rc.ValBatches, rc.Batch, rc.SeqLen)
	}
	classes := maps.Clone(rc.Codec)
	if t.shadow, err = newRun("shadow", false, rc.model, rc.Batch, rc.SeqLen, opt, classes, 0); err != nil {
		return nil, err
	}
	if t.lct, err = newRun("lct", true, rc.model, rc.Batch, rc.SeqLen, opt, classes, rc.poolBudget()); err != nil {
		return nil, err
	}
	for _, s := range append(t.lct.storedSlots(), t.lct.activationSlots()...) {
		t.names[s.name] = true
	}
	vals := InitialValues(rc.model, rc.Seed)
	if rc.ResumePath != "" {
		if vals, t.step, err = readCheckpoint(rc.ResumePath, rc, data); err != nil {
			return nil, err
		}
	}
	for _, r := range []*run{t.shadow, t.lct} {
		if err := r.load(vals); err != nil {
			return nil, fmt.Errorf("%s run: %w", r.name, err)
		}
	}
	t.last = t.snapshot(0, 0, 0, 0, codecClock{})
	return t, nil
}

// poolBudget is the configured pool, or 1/64 byte per element that the LCT
// run stores compressed (parameters, optimizer states, activations): room for
// about 1.5% of exponents to spill, above AUTO's 1% target.
func (rc resolved) poolBudget() int64 {
	if rc.PoolBudget > 0 {
		return rc.PoolBudget
	}
	m := rc.model
	perParam := int64(1 + 2) // weight, and at most two states
	acts := int64(m.Layers*12+2) * int64(rc.Batch*rc.SeqLen*m.Dim)
	return (perParam*int64(m.ParamCount()) + acts) / 64
}

// Config returns the configuration in use, defaults filled in.
func (t *Trainer) Config() Config { return t.cfg.Config }

// Model returns the model's shape.
func (t *Trainer) Model() ModelConfig { return t.cfg.model }

// Snapshots delivers a Snapshot after each step Run takes. It holds only the
// newest: a slow reader skips snapshots, training never waits for it. Run
// closes it when it returns.
func (t *Trainer) Snapshots() <-chan session.Snapshot { return t.snaps }

// Step takes one training step of both runs and returns its snapshot.
// Pending codec changes are applied first. Run calls it; the headless mode
// calls it directly to see every step.
func (t *Trainer) Step(ctx context.Context) (session.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return session.Snapshot{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.applyPending(); err != nil {
		return t.failed(err)
	}
	step := t.step + 1
	b := t.data.TrainBatch(t.cfg.Seed, step, t.cfg.Batch, t.cfg.SeqLen)
	lossS, timeS, err := t.shadow.trainStep(b, step)
	if err != nil {
		return t.failed(fmt.Errorf("step %d, shadow run: %w", step, err))
	}
	t.lct.st.clock = codecClock{}
	lossL, timeL, err := t.lct.trainStep(b, step)
	if err != nil {
		return t.failed(fmt.Errorf("step %d, LCT run: %w", step, err))
	}
	clock := t.lct.st.clock
	t.step = step
	if math.Float32bits(lossS) != math.Float32bits(lossL) && t.identical {
		t.identical = false
		t.mismatch = fmt.Sprintf("step %d: loss %v (LCT) vs %v (shadow)", step, lossL, lossS)
	}
	if t.cfg.CheckEvery > 0 && step%t.cfg.CheckEvery == 0 {
		if err := t.checkWeights(); err != nil {
			return t.failed(err)
		}
	}
	if t.cfg.ValEvery > 0 && step%t.cfg.ValEvery == 0 {
		if t.valLoss, err = t.validate(); err != nil {
			return t.failed(err)
		}
		t.valStep = step
	}
	if t.cfg.CheckpointEvery > 0 && step%t.cfg.CheckpointEvery == 0 {
		if err := t.saveCheckpoint(t.checkpointPath()); err != nil {
			return t.failed(err)
		}
	}
	t.last = t.snapshot(lossL, lossS, timeL, timeS, clock)
	return t.last, nil
}

// failed turns an error into the snapshot that reports it.
func (t *Trainer) failed(err error) (session.Snapshot, error) {
	s := t.last
	s.Time = time.Now()
	s.Err = err.Error()
	return s, err
}

// trainStep runs forward and backward on one batch.
func (r *run) trainStep(b *Batch, step int) (float32, time.Duration, error) {
	start := time.Now()
	loss, err := r.forward(b, true)
	if err != nil {
		return 0, 0, err
	}
	if err := r.backward(b, step); err != nil {
		return 0, 0, err
	}
	return loss, time.Since(start), nil
}

// checkWeights compares every parameter and optimizer state of the LCT run,
// decoded, with the shadow's, bit for bit.
func (t *Trainer) checkWeights() error {
	sh, lc := t.shadow.storedSlots(), t.lct.storedSlots()
	for i, s := range lc {
		want := sh[i].dense
		t.lct.st.forEachChunk(s, func(lo int, vals []uint16) {
			if !t.identical {
				return
			}
			for j, v := range vals {
				if v != want[lo+j] {
					t.identical = false
					t.mismatch = fmt.Sprintf("step %d: %s[%d] = %#04x (LCT) vs %#04x (shadow)", t.step, s.name, lo+j, v, want[lo+j])
					return
				}
			}
		})
	}
	t.weightsChecked = t.step
	return t.lct.st.takeErr()
}

// validate is the mean loss over the validation set, measured on the shadow
// (the runs are bit-identical; the check above says so).
func (t *Trainer) validate() (float32, error) {
	if len(t.val) == 0 {
		return 0, fmt.Errorf("validation: no validation batches configured")
	}
	var sum float64
	for _, b := range t.val {
		loss, err := t.shadow.forward(b, false)
		if err != nil {
			return 0, fmt.Errorf("validation: %w", err)
		}
		sum += float64(loss)
	}
	return float32(sum / float64(len(t.val))), nil
}

// snapshot gathers the figures of the step just taken.
func (t *Trainer) snapshot(lossL, lossS float32, timeL, timeS time.Duration, clock codecClock) session.Snapshot {
	memL, memS := t.lct.ledger.Memory(), t.shadow.ledger.Memory()
	s := session.Snapshot{
		Step: t.step, Time: time.Now(), Backend: t.cfg.Backend, Model: t.cfg.Model, Optimizer: t.cfg.Optimizer, Data: t.data.Name,
		LossLCT: lossL, LossShadow: lossS, ValLoss: t.valLoss, ValStep: t.valStep,
		BitIdentical: t.identical, Mismatch: t.mismatch, WeightsChecked: t.weightsChecked,
		StepTimeLCT: timeL, StepTimeShadow: timeS, CodecTime: clock.encode + clock.decode,
		EncodeGBps: gbps(clock.encodeBytes, clock.encode), DecodeGBps: gbps(clock.decodeBytes, clock.decode),
		MemLCT: memL, MemShadow: memS, PeakBytesLCT: memL.PeakTotal, PeakBytesShadow: memS.PeakTotal,
		PoolBytes: t.lct.st.pool.used, PoolBudget: t.lct.st.pool.budget, PoolPeak: t.lct.st.pool.peak,
		Workers: par.Workers(),
	}
	for _, sl := range append(t.lct.storedSlots(), t.lct.activationSlots()...) {
		if sl.stats.Name == "" {
			continue // an activation not computed yet
		}
		s.Tensors = append(s.Tensors, sl.stats)
		if sl.stats.Fallback {
			s.Fallbacks++
		}
	}
	return s
}

func gbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e9
}

// SetWorkers sets how many goroutines the trainer computes with, process
// wide (0: GOMAXPROCS). Results do not depend on it: every sum has a fixed
// order whatever the split.
func SetWorkers(n int) { par.SetWorkers(n) }

// Workers is the number of goroutines the trainer computes with.
func Workers() int { return par.Workers() }
