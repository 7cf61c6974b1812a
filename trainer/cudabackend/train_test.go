package cudabackend

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"lcttop/trainer"
	"lcttop/trainer/corpus"
	"lcttop/trainer/optim"
)

// testModel is a model small enough for the emulation to train quickly.
var testModel = trainer.ModelConfig{Name: "test", Layers: 2, Dim: 32, Heads: 2, Context: 32, Batch: 2, SeqLen: 16}

// testData is the built-in corpus split as the CPU trainer splits it.
func testData(t *testing.T, seqLen int) *trainer.Dataset {
	t.Helper()
	d, err := trainer.LoadData("", seqLen)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func testSGD() optimizerSettings {
	return optimizerSettings{SGD: &optim.SGD{Schedule: optim.Schedule{LR: 0.3}, Momentum: 0.9}}
}

func TestTrainReportsEveryStep(t *testing.T) {
	dev := testDevice(t)
	opts := TrainOptions{
		Config: Config{Model: testModel, Batch: 2, SeqLen: 16, Optimizer: testSGD()},
		Steps:  4, Seed: 3, Data: testData(t, 16), ValEvery: 2, ValBatches: 1, WarmupTiming: 1,
	}
	var seen []StepReport
	sum, err := Train(context.Background(), dev, opts, func(r StepReport) error {
		seen = append(seen, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != opts.Steps || sum.Steps != opts.Steps {
		t.Fatalf("%d reports, summary of %d steps, want %d", len(seen), sum.Steps, opts.Steps)
	}
	for i, r := range seen {
		if r.Step != i+1 || !(r.LossShadow > 0) || math.IsInf(float64(r.LossShadow), 0) || r.PeakShadow <= 0 || r.TimeShadow <= 0 {
			t.Errorf("report %d: %+v", i, r.stepResult)
		}
		if s := r.Snapshot; s.Step != r.Step || s.LossShadow != r.LossShadow || s.ValLoss != r.ValLoss || s.PeakBytesShadow != r.PeakShadow || s.Backend != "cuda" || s.Optimizer != "sgd" || s.Model != testModel.Name {
			t.Errorf("report %d: snapshot step %d loss %v val %v peak %d backend %q optimizer %q model %q", i, s.Step, s.LossShadow, s.ValLoss, s.PeakBytesShadow, s.Backend, s.Optimizer, s.Model)
		}
		if r.Shadow.PeakTotal != r.PeakShadow {
			t.Errorf("report %d: memory peak %d, step peak %d", i, r.Shadow.PeakTotal, r.PeakShadow)
		}
		// The parts of the step add up to at most its time (an evaluation's
		// forward after it adds nothing), each part of the step timed.
		var sum time.Duration
		for _, d := range r.PartsShadow {
			sum += d
		}
		if ms := r.PartsShadow.Millis(); len(ms) != len(StepPartNames) || sum <= 0 || sum > r.TimeShadow || r.PartsShadow[partForward] <= 0 || r.PartsShadow[partBackward] <= 0 {
			t.Errorf("report %d: step parts %v (sum %v) in a step of %v", i, r.PartsShadow, sum, r.TimeShadow)
		}
		if r.PartsLCT.Millis() != nil {
			t.Errorf("report %d: step parts %v of an LCT run that did not train", i, r.PartsLCT)
		}
	}
	if sum.FirstLoss != seen[0].LossShadow || sum.LastLoss != seen[3].LossShadow || sum.LastValLoss != seen[3].ValLoss || sum.FirstValLoss != seen[1].ValLoss {
		t.Errorf("summary %+v does not match the reports", sum)
	}
	if sum.FirstValLoss == 0 || sum.MedianStepShadow <= 0 || !sum.AllIdentical {
		t.Errorf("summary %+v", sum)
	}
	// What stays allocated between steps is the parameters and states,
	// and GELU's tables.
	kept := 2*2*int64(testModel.ParamCount()) + geluTableBytes
	if live := seen[3].Shadow.LiveTotal; live < kept || live > kept+int64(len(testModel.Params()))*2*align {
		t.Errorf("live bytes between steps %d, want about %d (weights, momentum and GELU's tables)", live, kept)
	}
}

// The sweep finds the longest length whose step fits: the budget is set
// to a measured step's peak, so that length must come out.
func TestSweepFindsLongestFit(t *testing.T) {
	dev := testDevice(t)
	opts := SweepOptions{Model: testModel, Optimizer: testSGD(), Min: 16, Max: 128, Quantum: 16, Seed: 5, Text: corpus.Text, Budget: 1 << 40}
	m := testModel
	m.Context = opts.Max
	tr, err := sweepTrial(dev, m, opts, trainer.InitialValues(m, opts.Seed), 80)
	if err != nil || !tr.Fits {
		t.Fatalf("trial at 80 with no budget: %+v, %v", tr, err)
	}
	opts.Budget = tr.Peak
	got, trials, err := Sweep(dev, opts, func(tr SweepTrial) { t.Logf("%+v", tr) })
	if err != nil {
		t.Fatal(err)
	}
	if got != 80 {
		t.Errorf("sweep found %d under the peak of length 80 (%d bytes), want 80", got, tr.Peak)
	}
	for _, tr := range trials {
		if tr.Fits != (tr.SeqLen <= 80) || (!tr.Fits && tr.Err == "") {
			t.Errorf("trial %+v", tr)
		}
	}
}

func TestSweepRejectsBadRange(t *testing.T) {
	dev := testDevice(t)
	if _, _, err := Sweep(dev, SweepOptions{Model: testModel, Optimizer: testSGD(), Min: 64, Max: 32, Quantum: 16, Budget: 1}, nil); err == nil {
		t.Error("a range from 64 to 32 was accepted")
	}
}

// Two runs from the same start on the same batches agree bit for bit, step
// after step: what the LCT run's comparison with the shadow rests on.
func TestRunsRepeatBitForBit(t *testing.T) {
	dev := testDevice(t)
	m := testModel
	cfg := Config{Model: m, Batch: 2, SeqLen: 16, Optimizer: optimizerSettings{AdamW: &optim.AdamW{Schedule: optim.Schedule{LR: 3e-3}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}}}
	text := testData(t, cfg.SeqLen)
	vals := trainer.InitialValues(m, 11)
	var runs [2]*lockstep
	var err error
	for i := range runs {
		if runs[i], err = newLockstep(dev, cfg, vals, nil); err != nil {
			t.Fatal(err)
		}
		defer runs[i].Close()
	}
	for step := 1; step <= 4; step++ {
		batch := text.TrainBatch(11, step, cfg.Batch, cfg.SeqLen)
		a, err := runs[0].Step(batch, step)
		if err != nil {
			t.Fatal(err)
		}
		b, err := runs[1].Step(batch, step)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float32bits(a.LossShadow) != math.Float32bits(b.LossShadow) {
			t.Fatalf("step %d: losses %v and %v", step, a.LossShadow, b.LossShadow)
		}
	}
	for _, name := range runs[0].Shadow.Names() {
		x, err := runs[0].Shadow.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		y, err := runs[1].Shadow.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		assertSameBF16(t, name+" of the second run", y, x)
	}
}

// With FigureEvery, a step's report carries the last tensor figures taken
// (their step's, not new ones) while everything else is the step's own;
// the last step takes them anew.
func TestTrainCarriesTensorFiguresBetweenTakes(t *testing.T) {
	dev := testDevice(t)
	opts := TrainOptions{
		Config: Config{Model: testModel, Batch: 2, SeqLen: 16, Optimizer: testSGD()},
		Steps:  3, Seed: 3, Data: testData(t, 16), CheckEvery: 1,
		LCT:         &LCTOptions{Codec: testGPUCodec(t)},
		FigureEvery: time.Hour,
	}
	var seen []StepReport
	if _, err := Train(context.Background(), dev, opts, func(r StepReport) error {
		seen = append(seen, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Fatalf("%d reports, want 3", len(seen))
	}
	first, second, last := seen[0].Snapshot, seen[1].Snapshot, seen[2].Snapshot
	if len(first.Tensors) == 0 {
		t.Fatal("the first step's report has no tensor figures")
	}
	if !reflect.DeepEqual(second.Tensors, first.Tensors) {
		t.Error("the second step's report does not carry the first's tensor figures")
	}
	if second.Step != 2 || second.LossLCT != seen[1].LossLCT || second.PeakBytesLCT != seen[1].PeakLCT || !second.BitIdentical || second.WeightsChecked != 2 {
		t.Errorf("the second step's report: step %d, loss %v (want %v), peak %d (want %d), identical %v, checked %d",
			second.Step, second.LossLCT, seen[1].LossLCT, second.PeakBytesLCT, seen[1].PeakLCT, second.BitIdentical, second.WeightsChecked)
	}
	if reflect.DeepEqual(last.Tensors, first.Tensors) {
		t.Error("the last step's report carries the first step's tensor figures, not its own")
	}
}
