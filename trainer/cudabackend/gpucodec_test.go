package cudabackend

import (
	"context"
	"math"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/gpu/lct"
	"lcttop/internal/testgpu"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/corpus"
)

// testGPUCodec opens a device of its own beside the trainer's (on the GPU,
// or the CPU emulation) and returns a codec on it, its work on a side
// stream as OpenCodec's.
func testGPUCodec(t testing.TB) *lct.Codec {
	c, _ := openTestGPUCodec(t, true)
	return c
}

// openTestGPUCodec is testGPUCodec with the codec's work on a side stream
// or, without side, on the trainer's stream ("gpu-serial"); it returns the
// codec's device too.
func openTestGPUCodec(t testing.TB, side bool) (*lct.Codec, *gpu.Device) {
	t.Helper()
	d := freshGPU(t)
	if side {
		if err := d.UseSideStream(); err != nil {
			t.Fatal(err)
		}
	}
	return lct.New(d), d
}

// codecModel is the GPT of the GPU codec's training tests.
var codecModel = testgpu.CodecModel

// The LCT run on the GPU codec takes the shadow's steps bit for bit with
// either optimizer: losses every step, every weight and state when
// checked; a small window makes it settle many times a step.
func TestLCTRunGPUCodecIdenticalToShadow(t *testing.T) {
	for _, c := range []struct {
		name   string
		opt    string
		window int64
		steps  int
	}{
		{"adamw", "adamw", 0, 3},
		{"sgd, 16 KiB window", "sgd", 16 << 10, 2},
	} {
		dev := testDevice(t)
		gc := testGPUCodec(t)
		profile := c.window != 0 // one case times the codec's work
		gc.SetProfile(profile)
		opts := TrainOptions{
			Config: Config{Model: codecModel, Batch: 2, SeqLen: 8, Optimizer: mustOptimizer(t, c.opt)},
			Steps:  c.steps, Seed: 23, Data: testData(t, 8), CheckEvery: c.steps,
			LCT: &LCTOptions{Codec: gc, Window: c.window},
		}
		sum, err := Train(context.Background(), dev, opts, func(r StepReport) error {
			if r.LossLCT != r.LossShadow {
				t.Errorf("%s, step %d: loss %v (LCT) vs %v (shadow)", c.name, r.Step, r.LossLCT, r.LossShadow)
			}
			if len(r.Snapshot.Tensors) == 0 {
				t.Errorf("%s, step %d: no tensor figures", c.name, r.Step)
			}
			if (r.CodecDeviceTime > 0) != profile || r.Settles < 1 {
				t.Errorf("%s, step %d: codec device time %v (profiling %v), %d settles", c.name, r.Step, r.CodecDeviceTime, profile, r.Settles)
			}
			checkCodecOps(t, c.name, r.stepResult, profile)
			if o := r.Overflow[session.Activations.String()]; o.Encodes < 1 {
				t.Errorf("%s, step %d: overflow figures %+v: want the step's activations' encodes", c.name, r.Step, r.Overflow)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !sum.AllIdentical || sum.Mismatch != "" || sum.WeightsChecked != c.steps {
			t.Errorf("%s: summary %+v", c.name, sum)
		}
	}
}

// Adam's states start at zero, so their first codebooks know one exponent:
// a settle finds the code stale and encodes the state again with a codebook
// fitted to its values (rather than the store keeping it raw), later
// drifts are refitted at the next encode, and the tensor figures follow the
// values encoded.
func TestGPUCodecRefitsDriftedCodebooks(t *testing.T) {
	dev := testDevice(t)
	gc := testGPUCodec(t)
	cfg := Config{Model: codecModel, Batch: 2, SeqLen: 8, Optimizer: mustOptimizer(t, "adamw")}
	b, err := newLockstep(dev, cfg, trainer.InitialValues(codecModel, 5), &LCTOptions{Codec: gc})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const name = "blk0.fc.w.v"
	codebook := func() codec.Codebook { // of the tensor the store holds
		t.Helper()
		for s, h := range b.LCT.lct.held {
			if s.name == name && h.enc != nil {
				return h.enc.Codebook()
			}
		}
		t.Fatalf("%s: no compressed tensor held", name)
		return codec.Codebook{}
	}
	cb0 := codebook()
	text := testData(t, cfg.SeqLen)
	for step := 1; step <= 2; step++ {
		if _, err := b.Step(text.TrainBatch(5, step, cfg.Batch, cfg.SeqLen), step); err != nil {
			t.Fatal(err)
		}
	}
	if codebook() == cb0 {
		t.Errorf("%s: codebook still the one fitted to zeros", name)
	}
	ts, err := b.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	vals, err := b.LCT.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	var want codec.Histogram
	for _, v := range vals {
		want[(v>>7)&0xFF]++
	}
	for _, s := range ts {
		if s.Name == name && s.Histogram != [256]uint64(want) {
			t.Errorf("%s: histogram in the figures is not that of its values (ratio %v):\n%v\n%v", name, s.Ratio, s.Histogram, want)
		}
		if s.Name == name && (s.Raw || s.Ratio <= 1) {
			t.Errorf("%s: stored as it is (ratio %v) after its codebook was refitted", name, s.Ratio)
		}
	}
}

// On the tiny model the LCT run on the GPU codec holds less than the shadow
// at its peak, every allocation of the codec counted in its ledger. (Slow
// on the CPU emulation: several minutes.)
func TestLCTRunGPUCodecUsesLessMemory(t *testing.T) {
	dev := testDevice(t)
	gc := testGPUCodec(t)
	m, err := trainer.LookupModel("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: m, Batch: m.Batch, SeqLen: m.SeqLen, Optimizer: mustOptimizer(t, "adamw")}
	b, err := newLockstep(dev, cfg, trainer.InitialValues(m, 4), &LCTOptions{Codec: gc})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	text := testData(t, cfg.SeqLen)
	var res stepResult
	for step := 1; step <= 2; step++ {
		if res, err = b.Step(text.TrainBatch(4, step, cfg.Batch, cfg.SeqLen), step); err != nil {
			t.Fatal(err)
		}
		if !res.BitIdentical {
			t.Fatalf("step %d: losses %v (LCT) vs %v (shadow)", step, res.LossLCT, res.LossShadow)
		}
	}
	ms, ml := b.Shadow.Memory(), b.LCT.Memory()
	if ml.PeakTotal >= ms.PeakTotal || ml.Live[session.Weights] >= ms.Live[session.Weights] {
		t.Errorf("LCT %+v, shadow %+v", ml, ms)
	}
	t.Logf("peak %d bytes (LCT) vs %d (shadow): %.1f%% less", ml.PeakTotal, ms.PeakTotal, 100*(1-float64(ml.PeakTotal)/float64(ms.PeakTotal)))
	// The codec's tables, descriptors and histograms are the run's too.
	if ml.Live[session.CodecScratch] == 0 {
		t.Errorf("LCT run's ledger %+v: no codec scratch live", ml)
	}
}

// A sweep on the GPU codec goes on past a trial that ran out of budget
// part way through a step (with tensors half made and encodes queued):
// the next trials start clean and the longest fit is found. (The fault the
// H200 showed there, a half-made tensor's status words read as a decode
// error, is gpu's TestTensorFailedAllocationReportsNothing.)
func TestSweepGPUCodecAfterOutOfBudget(t *testing.T) {
	dev := testDevice(t)
	gc := testGPUCodec(t)
	opts := SweepOptions{Model: codecModel, Optimizer: mustOptimizer(t, "adamw"), Min: 32, Max: 256, Quantum: 32, Seed: 3, Text: corpus.Text, Budget: 1 << 40,
		LCT: &LCTOptions{Codec: gc}}
	mm := codecModel
	mm.Context = opts.Max
	tr, err := sweepTrial(dev, mm, opts, trainer.InitialValues(mm, opts.Seed), opts.Max)
	if err != nil || !tr.Fits {
		t.Fatalf("LCT trial at %d: %+v, %v", opts.Max, tr, err)
	}
	opts.Budget = tr.Peak - 1 // the longest length no longer fits
	lct, trials, err := Sweep(dev, opts, func(tr SweepTrial) { t.Logf("LCT %+v", tr) })
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, tr := range trials {
		if !tr.Fits {
			failed++
		}
		if tr.Fits != (tr.SeqLen <= lct) {
			t.Errorf("trial %+v against the longest %d", tr, lct)
		}
	}
	if failed == 0 || lct < opts.Min || lct >= opts.Max {
		t.Errorf("within %d bytes, 1 less than the LCT peak at %d: LCT fits %d, %d trials out of budget", opts.Budget, opts.Max, lct, failed)
	}
}

// checkCodecOps checks a step's codec profile by kind: none without
// profiling; with it, the kinds add up to the device time, and the step
// encoded its activations in batches and decoded something.
func checkCodecOps(t *testing.T, name string, r stepResult, profile bool) {
	t.Helper()
	if !profile {
		if r.CodecOps != nil {
			t.Errorf("%s, step %d: codec ops %v without profiling", name, r.Step, r.CodecOps)
		}
		return
	}
	var ms float64
	encoded, decoded := false, false
	for kind, o := range r.CodecOps {
		if o.Launches < 1 || o.Ms <= 0 || o.MValues <= 0 {
			t.Errorf("%s, step %d: %s: %+v", name, r.Step, kind, o)
		}
		ms += o.Ms
		encoded = encoded || strings.HasPrefix(kind, "encode batch: ") && strings.Contains(kind, session.Activations.String())
		decoded = decoded || strings.HasPrefix(kind, "decode")
	}
	if got := float64(r.CodecDeviceTime) / 1e6; math.Abs(got-ms) > 1e-3 {
		t.Errorf("%s, step %d: codec ops add up to %.6f ms, device time %.6f ms", name, r.Step, ms, got)
	}
	if !encoded || !decoded {
		t.Errorf("%s, step %d: codec ops %v: want a batched encode of activations and a decode", name, r.Step, r.CodecOps)
	}
}
