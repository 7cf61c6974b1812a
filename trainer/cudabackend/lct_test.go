package cudabackend

import (
	"context"
	"maps"
	"testing"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/corpus"
)

// The LCT run, its tensors compressed, takes the shadow's steps bit for bit:
// losses every step, every weight and optimizer state when checked, with
// either optimizer and a non-default codec setting.
func TestLCTRunIdenticalToShadow(t *testing.T) {
	high := maps.Clone(trainer.DefaultClassCodec)
	for c := range high {
		high[c] = session.ClassCodec{Preset: codec.High, Dist: codec.Gaussian}
	}
	for _, c := range []struct {
		name    string
		opt     optimizerSettings
		classes map[session.TensorClass]session.ClassCodec
	}{
		{"adamw, default codec", mustOptimizer(t, "adamw"), nil},
		{"sgd, high/gaussian", mustOptimizer(t, "sgd"), high},
	} {
		dev := testDevice(t)
		opts := TrainOptions{
			Config: Config{Model: testModel, Batch: 2, SeqLen: 16, Optimizer: c.opt},
			Steps:  6, Seed: 21, Data: testData(t, 16), CheckEvery: 3,
			LCT: &LCTOptions{Classes: c.classes},
		}
		var last StepReport
		sum, err := Train(context.Background(), dev, opts, func(r StepReport) error {
			last = r
			if r.LossLCT != r.LossShadow {
				t.Errorf("%s, step %d: loss %v (LCT) vs %v (shadow)", c.name, r.Step, r.LossLCT, r.LossShadow)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !sum.AllIdentical || sum.Mismatch != "" || sum.WeightsChecked != 6 {
			t.Errorf("%s: summary %+v", c.name, sum)
		}
		if last.LCT.Peak[session.CodecScratch] == 0 || last.LCT.Live[session.Weights] == 0 {
			t.Errorf("%s: LCT run's memory %+v: no codec scratch or no weights", c.name, last.LCT)
		}
	}
}

func mustOptimizer(t *testing.T, name string) optimizerSettings {
	t.Helper()
	o, err := trainer.NewOptimizerSettings(name, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// tinyLockstep is the tiny model's LCT run beside its shadow under AdamW,
// closed when the test ends.
func tinyLockstep(t *testing.T) (*lockstep, Config) {
	t.Helper()
	m, err := trainer.LookupModel("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: m, Batch: m.Batch, SeqLen: m.SeqLen, Optimizer: mustOptimizer(t, "adamw")}
	b, err := newLockstep(testDevice(t), cfg, trainer.InitialValues(m, 4), &LCTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, cfg
}

// On the tiny model, whose tensors are large enough for the codec to pay,
// the LCT run holds its weights, states and saved activations in fewer
// bytes than the shadow, and its peak is lower.
func TestLCTRunUsesLessMemory(t *testing.T) {
	b, cfg := tinyLockstep(t)
	text := testData(t, cfg.SeqLen)
	res, err := b.Step(text.TrainBatch(4, 1, cfg.Batch, cfg.SeqLen), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !res.BitIdentical {
		t.Fatalf("losses %v (LCT) vs %v (shadow)", res.LossLCT, res.LossShadow)
	}
	ms, ml := b.Shadow.Memory(), b.LCT.Memory()
	for _, c := range []session.Category{session.Weights, session.OptimizerState} {
		if ml.Live[c] >= ms.Live[c] {
			t.Errorf("%s: %d bytes live in the LCT run, %d in the shadow", c, ml.Live[c], ms.Live[c])
		}
	}
	if ml.Peak[session.Activations] >= ms.Peak[session.Activations] || ml.PeakTotal >= ms.PeakTotal {
		t.Errorf("peaks: LCT %+v, shadow %+v", ml, ms)
	}
	t.Logf("peak %d bytes (LCT) vs %d (shadow): %.1f%% less; codec %v of the LCT step's %v",
		ml.PeakTotal, ms.PeakTotal, 100*(1-float64(ml.PeakTotal)/float64(ms.PeakTotal)), res.CodecTime, res.TimeLCT)
	ts, err := b.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != len(b.LCT.Names()) {
		t.Errorf("%d tensor reports for %d stored tensors", len(ts), len(b.LCT.Names()))
	}
}

// The sweep searches the LCT run the same way: under the peak the shadow
// needs at some length, the LCT run fits that length at least.
func TestSweepLCTFitsWhatDenseFits(t *testing.T) {
	dev := testDevice(t)
	m, err := trainer.LookupModel("tiny")
	if err != nil {
		t.Fatal(err)
	}
	opts := SweepOptions{Model: m, Optimizer: mustOptimizer(t, "sgd"), Min: 32, Max: 256, Quantum: 32, Seed: 5, Text: corpus.Text, Budget: 1 << 40}
	mm := m
	mm.Context = opts.Max
	tr, err := sweepTrial(dev, mm, opts, trainer.InitialValues(mm, opts.Seed), 96)
	if err != nil || !tr.Fits {
		t.Fatalf("dense trial at 96: %+v, %v", tr, err)
	}
	opts.Budget = tr.Peak
	dense, _, err := Sweep(dev, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.LCT = &LCTOptions{}
	lct, trials, err := Sweep(dev, opts, func(tr SweepTrial) { t.Logf("LCT %+v", tr) })
	if err != nil {
		t.Fatal(err)
	}
	if dense != 96 || lct < dense {
		t.Errorf("within the dense peak at 96 (%d bytes): dense %d, LCT %d", opts.Budget, dense, lct)
	}
	for _, tr := range trials {
		if tr.Fits != (tr.SeqLen <= lct) {
			t.Errorf("trial %+v against the longest %d", tr, lct)
		}
	}
}

// A step's Snapshot carries both runs' figures the way the CPU trainer's do.
func TestSnapshot(t *testing.T) {
	dev := testDevice(t)
	cfg := Config{Model: testModel, Batch: 2, SeqLen: 16, Optimizer: mustOptimizer(t, "adamw")}
	b, err := newLockstep(dev, cfg, trainer.InitialValues(testModel, 2), &LCTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	text := testData(t, cfg.SeqLen)
	res, err := b.Step(text.TrainBatch(2, 1, cfg.Batch, cfg.SeqLen), 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Snapshot(res, "test", "adamw", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Step != 1 || s.Backend != "cuda" || !s.BitIdentical || s.LossLCT != s.LossShadow || s.PeakBytesLCT <= 0 ||
		s.PeakBytesShadow != s.MemShadow.PeakTotal || s.PeakBytesLCT != s.MemLCT.PeakTotal || len(s.Tensors) != len(b.LCT.Names()) {
		t.Errorf("snapshot %+v", s)
	}
	if s, err := b.Snapshot(res, "test", "adamw", 0, "step 1: differs"); err != nil || s.BitIdentical {
		t.Error("a mismatch was reported as identical")
	}
}

// The store keeps tensors up to its size limit as they are, though the
// codec would make some of them smaller: with the limit raised past the
// tiny model's biases, none of those is compressed after a step, where
// without it some are.
func TestLCTStoreKeepsSmallTensorsRaw(t *testing.T) {
	dev := testDevice(t)
	m, err := trainer.LookupModel("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: m, Batch: m.Batch, SeqLen: m.SeqLen, Optimizer: mustOptimizer(t, "adamw")}
	const limit = 4 * 128 // the largest bias (fc.b)
	compressedSmall := func(raise bool) []string {
		b, err := newLockstep(dev, cfg, trainer.InitialValues(m, 4), &LCTOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if raise {
			b.LCT.lct.rawBelow = limit
		}
		text := testData(t, cfg.SeqLen)
		if _, err := b.Step(text.TrainBatch(4, 1, cfg.Batch, cfg.SeqLen), 1); err != nil {
			t.Fatal(err)
		}
		ts, err := b.Tensors()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range ts {
			if s.Elements <= limit && !s.Raw {
				names = append(names, s.Name)
			}
		}
		return names
	}
	if got := compressedSmall(false); len(got) == 0 {
		t.Fatalf("without the limit no tensor of at most %d values is compressed: the test shows nothing", limit)
	}
	if got := compressedSmall(true); len(got) > 0 {
		t.Errorf("tensors of at most %d values compressed: %v", limit, got)
	}
}

// The figures of tensors stored as they are, downloaded in one copy for
// all of them, are those of each tensor downloaded alone.
func TestTensorsDownloadRawValuesAtOnce(t *testing.T) {
	b, cfg := tinyLockstep(t)
	text := testData(t, cfg.SeqLen)
	for step := 1; step <= 2; step++ {
		if _, err := b.Step(text.TrainBatch(4, step, cfg.Batch, cfg.SeqLen), step); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := b.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	ls := b.LCT.lct
	byName := map[string]*slot{}
	for _, p := range b.LCT.params {
		for _, s := range append([]*slot{p.w}, p.state...) {
			byName[s.name] = s
		}
	}
	raw := 0
	for _, got := range ts {
		if !got.Raw {
			continue
		}
		raw++
		alone, ok, err := ls.tensorStats(byName[got.Name], nil)
		if err != nil || !ok {
			t.Fatalf("%s alone: %v, %v", got.Name, ok, err)
		}
		if got.Histogram != alone.Histogram || got.Entropy != alone.Entropy {
			t.Errorf("%s: histogram from the joint download differs from its own", got.Name)
		}
	}
	if raw < 2 {
		t.Fatalf("%d tensors stored as they are: the test shows nothing", raw)
	}
}
