package cudabackend

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testtensors"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/corpus"
)

// testGPUCodec opens a device of its own beside the trainer's (on the GPU,
// or the CPU emulation) and returns a codec on it, its work on a side
// stream as OpenCodec's.
func testGPUCodec(t testing.TB) *gpuCodec { return openTestGPUCodec(t, true) }

// openTestGPUCodec is testGPUCodec with the codec's work on a side stream
// or, without side, on the trainer's stream ("gpu-serial").
func openTestGPUCodec(t testing.TB, side bool) *gpuCodec {
	t.Helper()
	d := freshGPU(t)
	if side {
		if err := d.UseSideStream(); err != nil {
			t.Fatal(err)
		}
	}
	return newGPUCodec(d)
}

// codecModel is the GPT of the GPU codec's training tests: one block, so
// that they finish in a couple of minutes on the CPU emulation, which runs
// every CTA's 256 threads as OS threads.
var codecModel = trainer.ModelConfig{Name: "codec-test", Layers: 1, Dim: 32, Heads: 2, Context: 16, Batch: 2, SeqLen: 8}

// codecTensors are the tensors the codec tests encode: real weights,
// gradients, optimizer states and activations (the first of each file), the
// starting weights of the test model, and all-zero and tiny tensors.
func codecTensors(t *testing.T) map[string][]uint16 {
	out := map[string][]uint16{}
	for _, f := range testtensors.Files(t) {
		if ts := testtensors.LoadBF16(t, f); len(ts) > 0 {
			out[filepath.Base(f)+":"+ts[0].Name] = ts[0].Values
		}
	}
	for name, v := range trainer.InitialValues(codecModel, 3) {
		out["init:"+name] = v
	}
	out["zeros"] = make([]uint16, 70000)
	out["one"] = []uint16{0x3f80}
	return out
}

// The GPU codec, working on the trainer's device memory, writes the bytes
// the reference codec writes (HostCodec's serialised tensor) and reports the
// same figures, and decodes them back exactly; encodes whose spill needs
// overflow room are settled by encoding them again.
func TestGPUCodecMatchesHostCodec(t *testing.T) {
	h := newTDev(t)
	gc := testGPUCodec(t)
	var hc HostCodec
	cc := session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	spilled := 0
	for name, v := range codecTensors(t) {
		src := h.bf16(v)
		want, err := hc.Encode(h.mem, name, session.Weights, src, len(v), cc, nil)
		h.check(err)
		got, err := gc.Encode(h.mem, name, session.Weights, src, len(v), cc, nil)
		h.check(err)
		if got.Settled() {
			t.Fatalf("%s: a GPU encode settled before Settle", name)
		}
		h.check(gc.Settle(h.mem, []Pending{{T: got, Src: src}}))
		gt := got.(*gpuTensor)
		var ct codec.Tensor
		h.check(gt.t.Download(&ct))
		gotBytes, err := ct.MarshalBinary()
		h.check(err)
		ht := want.(*hostTensor)
		wantBytes := make([]byte, ht.bytes)
		h.check(h.d.Download(wantBytes, ht.ptr))
		if !bytes.Equal(gotBytes, wantBytes) {
			t.Errorf("%s (%d values): GPU codec wrote %d bytes, host codec %d, not the same", name, len(v), len(gotBytes), len(wantBytes))
			continue
		}
		if got.Bytes() != want.Bytes() {
			t.Errorf("%s: Bytes %d (GPU) vs %d (host)", name, got.Bytes(), want.Bytes())
		}
		gs, err := got.Stats()
		h.check(err)
		hs, _ := want.Stats()
		if gs != hs {
			t.Errorf("%s: stats\n GPU  %+v\n host %+v", name, gs, hs)
		}
		spilled += gs.Spilled
		out := h.alloc(2 * int64(len(v)))
		h.check(gc.Decode(out, got))
		h.check(gc.Settle(h.mem, nil))
		assertSameBF16(t, name+" decoded", h.get16(out, len(v)), v)
		gc.Free(h.mem, got)
		hc.Free(h.mem, want)
	}
	if spilled == 0 {
		t.Error("no tensor spilled: the overflow path was not exercised")
	}
}

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
		gc.Profile = c.window != 0 // one case times the codec's work
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
			if (r.CodecDeviceTime > 0) != gc.Profile || r.Settles < 1 {
				t.Errorf("%s, step %d: codec device time %v (profiling %v), %d settles", c.name, r.Step, r.CodecDeviceTime, gc.Profile, r.Settles)
			}
			checkCodecOps(t, c.name, r.stepResult, gc.Profile)
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
	first := gc.keys[name]
	if first == nil {
		t.Fatalf("no codec state for %s", name)
	}
	cb0 := first.cb
	text := testData(t, cfg.SeqLen)
	for step := 1; step <= 2; step++ {
		if _, err := b.Step(text.TrainBatch(5, step, cfg.Batch, cfg.SeqLen), step); err != nil {
			t.Fatal(err)
		}
	}
	if gc.keys[name].cb == cb0 {
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
