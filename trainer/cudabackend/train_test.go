package cudabackend

import (
	"context"
	"math"
	"testing"

	"lcttop/trainer"
	"lcttop/trainer/corpus"
	"lcttop/trainer/optim"
)

// testModel is a model small enough for the emulation to train quickly.
var testModel = trainer.ModelConfig{Name: "test", Layers: 2, Dim: 32, Heads: 2, Context: 32, Batch: 2, SeqLen: 16}

func testSGD() Optimizer {
	return Optimizer{SGD: &optim.SGD{Schedule: optim.Schedule{LR: 0.3}, Momentum: 0.9}}
}

func TestTrainReportsEveryStep(t *testing.T) {
	dev := testDevice(t)
	opts := TrainOptions{
		Config: Config{Model: testModel, Batch: 2, SeqLen: 16, Optimizer: testSGD()},
		Steps:  4, Seed: 3, Text: corpus.Text, ValEvery: 2, ValBatches: 1, WarmupTiming: 1,
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
			t.Errorf("report %d: %+v", i, r.StepResult)
		}
		if r.Shadow.PeakTotal != r.PeakShadow {
			t.Errorf("report %d: memory peak %d, step peak %d", i, r.Shadow.PeakTotal, r.PeakShadow)
		}
	}
	if sum.FirstLoss != seen[0].LossShadow || sum.LastLoss != seen[3].LossShadow || sum.LastValLoss != seen[3].ValLoss || sum.FirstValLoss != seen[1].ValLoss {
		t.Errorf("summary %+v does not match the reports", sum)
	}
	if sum.FirstValLoss == 0 || sum.MedianStepShadow <= 0 || !sum.AllIdentical {
		t.Errorf("summary %+v", sum)
	}
	// What stays allocated between steps is the parameters and states.
	params := int64(testModel.ParamCount())
	if live := seen[3].Shadow.LiveTotal; live < 2*2*params || live > 2*2*params+int64(len(testModel.Params()))*2*align {
		t.Errorf("live bytes between steps %d, want about %d (weights and momentum)", live, 2*2*params)
	}
}

// The sweep finds the longest length whose step fits: the budget is set
// to a measured step's peak, so that length must come out.
func TestSweepFindsLongestFit(t *testing.T) {
	dev := testDevice(t)
	opts := SweepOptions{Model: testModel, Optimizer: testSGD(), Min: 16, Max: 128, Quantum: 16, Seed: 5, Text: corpus.Text, Budget: 1 << 40}
	m := testModel
	m.Context = opts.Max
	tr, err := sweepTrial(dev, m, opts, InitialValues(m, opts.Seed), 80)
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
