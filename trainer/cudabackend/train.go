package cudabackend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"lcttop/session"
	"lcttop/trainer"
)

// TrainOptions is a headless training on the device.
type TrainOptions struct {
	Config                        // model, batch, sequence length, optimizer, budget
	Steps        int              // steps to take
	Seed         uint64           // starting values and batches, as the CPU trainer draws them
	Data         *trainer.Dataset // training and validation text (trainer.LoadData)
	ValEvery     int              // validation loss every so many steps (0: never)
	ValBatches   int              // batches in the validation set
	LCT          *LCTOptions      // train the compressed run beside the shadow
	CheckEvery   int              // compare all weights and states of the two runs every so many steps (0: never)
	WarmupTiming int              // steps left out of the median step time (module load, pool growth)
	// FigureEvery is how often Train takes the LCT run's per-tensor figures
	// for the report's Snapshot (a small read back per tensor); between,
	// the Snapshot carries the last ones. 0: every step.
	FigureEvery time.Duration
}

// StepReport is what Train reports after each step.
type StepReport struct {
	stepResult
	ValLoss        float32 // latest validation loss (0 until measured)
	ValStep        int     // the step ValLoss was measured after
	Shadow, LCT    session.Memory
	Mismatch       string // the first difference between the runs so far
	WeightsChecked int
	// Snapshot is the step as the trainer's UI and headless mode show it.
	Snapshot session.Snapshot
}

// Summary is a whole training's figures.
type Summary struct {
	Steps            int
	FirstLoss        float32
	LastLoss         float32
	FirstValLoss     float32
	LastValLoss      float32
	MedianStepShadow time.Duration // over the steps after WarmupTiming
	MedianStepLCT    time.Duration
	PeakShadow       int64 // ledger's peak bytes
	PeakLCT          int64
	AllIdentical     bool   // every step's losses (and weights, when checked) were bit-identical
	Mismatch         string // the first difference, if any
	WeightsChecked   int    // the last step whose weights were compared
}

// Train runs opts on dev, calling report after each step (a non-nil error
// from report stops it).
func Train(ctx context.Context, dev Device, opts TrainOptions, report func(StepReport) error) (Summary, error) {
	if opts.Steps < 1 {
		return Summary{}, fmt.Errorf("steps %d: must be at least 1", opts.Steps)
	}
	t, err := newTraining(dev, opts)
	if err != nil {
		return Summary{}, err
	}
	defer t.b.Close()
	var last session.Snapshot // the last report's, whose tensor figures a report may carry
	var figured time.Time     // when they were taken
	for t.step < opts.Steps {
		if err := ctx.Err(); err != nil {
			return t.summary(), err
		}
		res, err := t.next()
		if err != nil {
			return t.summary(), err
		}
		if report == nil {
			continue
		}
		var rep StepReport
		if opts.FigureEvery > 0 && time.Since(figured) < opts.FigureEvery && t.step < opts.Steps {
			rep = t.reportCarrying(last, res)
		} else {
			if rep, err = t.report(res); err != nil {
				return t.summary(), fmt.Errorf("step %d: %w", res.Step, err)
			}
			figured = time.Now()
		}
		last = rep.Snapshot
		if err := report(rep); err != nil {
			return t.summary(), err
		}
	}
	return t.summary(), nil
}

// training is a training in progress: the backend, the next batches, and
// what its steps have measured so far.
type training struct {
	opts           TrainOptions
	b              *lockstep
	val            []*trainer.Batch
	step           int
	sum            Summary
	valLoss        float32
	valStep        int // the step valLoss was measured after
	timesS, timesL []time.Duration
}

// newTraining checks opts and sets up their runs on dev.
func newTraining(dev Device, opts TrainOptions) (*training, error) {
	text := opts.Data
	if text == nil {
		return nil, errors.New("no training data")
	}
	if need := opts.SeqLen + 1; len(text.Train) < need || len(text.Val) < need {
		return nil, fmt.Errorf("training data %s: %d and %d bytes of training and validation text, sequences of %d need at least %d each", text.Name, len(text.Train), len(text.Val), opts.SeqLen, need)
	}
	t := &training{opts: opts}
	if opts.ValEvery > 0 {
		if opts.ValBatches < 1 {
			return nil, fmt.Errorf("validation every %d steps needs at least one validation batch", opts.ValEvery)
		}
		t.val = text.ValBatches(opts.ValBatches, opts.Batch, opts.SeqLen)
	}
	b, err := newLockstep(dev, opts.Config, trainer.InitialValues(opts.Model, opts.Seed), opts.LCT)
	if err != nil {
		return nil, err
	}
	t.b = b
	t.sum.AllIdentical = true
	return t, nil
}

// next takes the next step of both runs, validates and compares their
// weights when it is time.
func (t *training) next() (stepResult, error) {
	opts, b, sum := &t.opts, t.b, &t.sum
	step := t.step + 1
	res, err := b.Step(opts.Data.TrainBatch(opts.Seed, step, opts.Batch, opts.SeqLen), step)
	if err != nil {
		return res, fmt.Errorf("step %d: %w", step, err)
	}
	t.step = step
	if opts.ValEvery > 0 && step%opts.ValEvery == 0 {
		if t.valLoss, err = b.Validate(t.val); err != nil {
			return res, fmt.Errorf("step %d: %w", step, err)
		}
		t.valStep = step
		if sum.FirstValLoss == 0 {
			sum.FirstValLoss = t.valLoss
		}
		sum.LastValLoss = t.valLoss
	}
	loss := res.LossShadow
	if b.Shadow == nil {
		loss = res.LossLCT
	}
	if step == 1 {
		sum.FirstLoss = loss
	}
	sum.Steps, sum.LastLoss = step, loss
	if !res.BitIdentical && sum.Mismatch == "" {
		sum.Mismatch = fmt.Sprintf("step %d: loss %v (LCT) vs %v (shadow)", step, res.LossLCT, res.LossShadow)
	}
	if opts.CheckEvery > 0 && step%opts.CheckEvery == 0 {
		diff, err := b.CheckWeights()
		if err != nil {
			return res, fmt.Errorf("step %d: comparing weights: %w", step, err)
		}
		if diff != "" && sum.Mismatch == "" {
			sum.Mismatch = fmt.Sprintf("step %d: %s", step, diff)
		}
		sum.WeightsChecked = step
	}
	sum.AllIdentical = sum.Mismatch == ""
	sum.PeakShadow, sum.PeakLCT = max(sum.PeakShadow, res.PeakShadow), max(sum.PeakLCT, res.PeakLCT)
	if step > opts.WarmupTiming {
		t.timesS = append(t.timesS, res.TimeShadow)
		t.timesL = append(t.timesL, res.TimeLCT)
	}
	return res, nil
}

// report is the StepReport of res, the step just taken, its Snapshot with
// the LCT run's tensor figures.
func (t *training) report(res stepResult) (StepReport, error) {
	rep := t.reportBase(res)
	var err error
	if rep.Snapshot, err = t.b.Snapshot(res, t.opts.Model.Name, optimizerName(t.opts.Optimizer), t.valLoss, t.sum.Mismatch); err != nil {
		return rep, err
	}
	rep.Snapshot.WeightsChecked, rep.Snapshot.ValStep = t.sum.WeightsChecked, t.valStep
	return rep, nil
}

// reportBase is the StepReport of res without its Snapshot.
func (t *training) reportBase(res stepResult) StepReport {
	b, sum := t.b, &t.sum
	rep := StepReport{stepResult: res, ValLoss: t.valLoss, ValStep: t.valStep, Mismatch: sum.Mismatch, WeightsChecked: sum.WeightsChecked}
	rep.BitIdentical = sum.AllIdentical
	if b.Shadow != nil {
		rep.Shadow = b.Shadow.Memory()
	}
	if b.LCT != nil {
		rep.LCT = b.LCT.Memory()
	}
	return rep
}

// reportCarrying is the StepReport of res with last's tensor figures
// instead of new ones.
func (t *training) reportCarrying(last session.Snapshot, res stepResult) StepReport {
	rep := t.reportBase(res)
	rep.Snapshot = t.carried(last, res)
	return rep
}

// carried is last, a step's Snapshot, brought to the step just taken (res)
// in all but its tensor figures.
func (t *training) carried(last session.Snapshot, res stepResult) session.Snapshot {
	snap := last
	snap.Step, snap.Time = res.Step, time.Now()
	snap.LossShadow, snap.LossLCT, snap.ValLoss, snap.ValStep = res.LossShadow, res.LossLCT, t.valLoss, t.valStep
	snap.StepTimeShadow, snap.StepTimeLCT, snap.CodecTime = res.TimeShadow, res.TimeLCT, res.CodecTime
	if t.b.Shadow != nil {
		snap.MemShadow = t.b.Shadow.Memory()
	}
	snap.PeakBytesShadow = res.PeakShadow
	if t.b.LCT != nil {
		snap.MemLCT, snap.PeakBytesLCT = t.b.LCT.Memory(), res.PeakLCT
	}
	snap.BitIdentical, snap.Mismatch, snap.WeightsChecked = t.sum.AllIdentical, t.sum.Mismatch, t.sum.WeightsChecked
	if t.b.LCT == nil {
		snap.BitIdentical, snap.Mismatch = false, "no LCT run"
	}
	return snap
}

// summary is the training's figures so far.
func (t *training) summary() Summary {
	s := t.sum
	s.MedianStepShadow, s.MedianStepLCT = median(t.timesS), median(t.timesL)
	return s
}

// optimizerName is the name trainer.NewOptimizerSettings knows o by.
func optimizerName(o optimizerSettings) string {
	if o.AdamW != nil {
		return "adamw"
	}
	return "sgd"
}

// Validate is the mean loss of the shadow run over batches (the runs are
// bit-identical when the LCT run exists: the step results say so), or of
// the LCT run alone.
func (b *lockstep) Validate(batches []*trainer.Batch) (float32, error) {
	if len(batches) == 0 {
		return 0, errors.New("validation: no batches")
	}
	r := b.Shadow
	if r == nil {
		r = b.LCT
	}
	var s float64
	for _, vb := range batches {
		l, err := r.Evaluate(vb.Tokens, vb.Targets)
		if err != nil {
			return 0, fmt.Errorf("validation: %w", err)
		}
		s += float64(l)
	}
	return float32(s / float64(len(batches))), nil
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// SweepOptions searches, at batch size 1 under a memory budget, the longest
// sequence one training step fits in.
type SweepOptions struct {
	Model     trainer.ModelConfig // its Context is raised to Max
	Optimizer optimizerSettings
	Budget    int64 // bytes, as the ledger counts them
	Min, Max  int   // sequence lengths searched, in steps of Quantum
	Quantum   int
	Seed      uint64
	Text      []byte
	LCT       *LCTOptions // search for the LCT run (nil: the dense run)
}

// SweepTrial is one sequence length tried.
type SweepTrial struct {
	SeqLen int
	Fits   bool
	Peak   int64  // ledger's peak bytes of the step (or when it failed)
	Err    string // why it did not fit
}

// Sweep returns the longest sequence length in [Min, Max] (a multiple of
// Quantum) whose training step fits the budget, 0 if none does, and every
// length it tried. A failure other than running out of memory stops it.
func Sweep(dev Device, opts SweepOptions, log func(SweepTrial)) (int, []SweepTrial, error) {
	if opts.Quantum < 1 || opts.Min < opts.Quantum || opts.Max < opts.Min {
		return 0, nil, fmt.Errorf("sweep: lengths %d..%d in steps of %d", opts.Min, opts.Max, opts.Quantum)
	}
	if opts.Budget <= 0 {
		return 0, nil, errors.New("sweep: a memory budget is needed")
	}
	if len(opts.Text) < opts.Max+2 {
		return 0, nil, fmt.Errorf("sweep: %d bytes of text, sequences of %d need %d", len(opts.Text), opts.Max, opts.Max+2)
	}
	m := opts.Model
	m.Context = opts.Max
	vals := trainer.InitialValues(m, opts.Seed)
	var trials []SweepTrial
	try := func(T int) (bool, error) {
		tr, err := sweepTrial(dev, m, opts, vals, T)
		if err != nil {
			return false, err
		}
		trials = append(trials, tr)
		if log != nil {
			log(tr)
		}
		return tr.Fits, nil
	}
	// Lengths are k·Quantum; find the largest k that fits by bisection
	// between the smallest and the largest.
	lo, hi := opts.Min/opts.Quantum, opts.Max/opts.Quantum
	ok, err := try(lo * opts.Quantum)
	if err != nil || !ok {
		return 0, trials, err
	}
	if ok, err := try(hi * opts.Quantum); err != nil || ok {
		if ok {
			return hi * opts.Quantum, trials, nil
		}
		return 0, trials, err
	}
	for hi-lo > 1 { // lo fits, hi does not
		mid := (lo + hi) / 2
		ok, err := try(mid * opts.Quantum)
		if err != nil {
			return 0, trials, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo * opts.Quantum, trials, nil
}

// sweepTrial trains one step at batch 1 and length T in a fresh run.
func sweepTrial(dev Device, m trainer.ModelConfig, opts SweepOptions, vals map[string][]uint16, T int) (SweepTrial, error) {
	tr := SweepTrial{SeqLen: T}
	cfg := Config{Model: m, Batch: 1, SeqLen: T, Optimizer: opts.Optimizer, Budget: opts.Budget}
	name := "shadow"
	if opts.LCT != nil {
		name = "lct"
	}
	if opts.LCT != nil {
		if c := opts.LCT.Codec; c != nil {
			c.Forget()
		}
	}
	pool := newDevicePool(dev)
	r, err := newLoadedRun(pool, name, cfg, vals, opts.LCT)
	if err == nil {
		batch := trainer.NewBatch(1, T)
		batch.Fill(0, T, opts.Text, 0)
		_, _, err = r.TrainStep(batch.Tokens, batch.Targets, 1)
		tr.Peak = r.Memory().PeakTotal
		r.Close()
	}
	if terr := pool.Trim(); terr != nil && err == nil {
		err = terr
	}
	if err != nil {
		if !isOutOfMemory(err) {
			return tr, fmt.Errorf("sweep at length %d: %w", T, err)
		}
		tr.Err = err.Error()
		return tr, nil
	}
	tr.Fits = true
	return tr, nil
}

// isOutOfMemory tells a step that did not fit (the budget, or the device
// itself) from one that failed otherwise.
func isOutOfMemory(err error) bool {
	s := err.Error()
	return strings.Contains(s, "out of memory budget") || strings.Contains(s, "CUDA_ERROR_OUT_OF_MEMORY") || strings.Contains(s, "out of memory")
}
