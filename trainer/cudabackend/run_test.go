package cudabackend

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
	"lcttop/trainer"
)

// cpuTrainer is the CPU trainer on the tiny model, as the headless mode
// would start it, with the AdamW settings the CUDA run must share.
func cpuTrainer(t *testing.T, seed uint64) (*trainer.Trainer, Config) {
	t.Helper()
	cfg := trainer.DefaultConfig()
	cfg.Model, cfg.Seed, cfg.ValEvery, cfg.CheckEvery = "tiny", seed, 0, 0
	tr, err := trainer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := tr.Model()
	opt, err := trainer.NewOptimizerSettings(cfg.Optimizer, cfg.LR, cfg.Warmup)
	if err != nil {
		t.Fatal(err)
	}
	return tr, Config{Model: m, Batch: m.Batch, SeqLen: m.SeqLen, Optimizer: opt}
}

// checkpointValues reads a trainer checkpoint's tensors.
func checkpointValues(t *testing.T, tr *trainer.Trainer) map[string][]uint16 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.lct")
	if err := tr.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(t.TempDir(), "c.safetensors")
	if err := lctfile.UnpackFile(path, raw, nil); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]uint16{}
	for _, ti := range f.Tensors {
		out[ti.Name] = safetensors.BF16Values(f.Bytes(ti))
	}
	return out
}

// The CUDA run starts from exactly the CPU trainer's values and, step by
// step on the same batches, tracks its losses and weights: exactly except
// where attention and the cuBLAS products sum in their own order.
func TestDenseRunTracksCPUTrainer(t *testing.T) {
	dev := testDevice(t)
	const seed, steps = 7, 3
	tr, cfg := cpuTrainer(t, seed)
	b, err := newLockstep(dev, cfg, trainer.InitialValues(cfg.Model, seed), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// What the device holds before a step is what the CPU trainer starts
	// from, states included (zero).
	for name, want := range checkpointValues(t, tr) {
		got, err := b.Shadow.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		assertSameBF16(t, "starting "+name, got, want)
	}
	text := testData(t, cfg.SeqLen)
	for step := 1; step <= steps; step++ {
		snap, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Step(text.TrainBatch(seed, step, cfg.Batch, cfg.SeqLen), step)
		if err != nil {
			t.Fatal(err)
		}
		d := math.Abs(float64(res.LossShadow - snap.LossShadow))
		t.Logf("step %d: loss %.6f (CUDA) vs %.6f (CPU), difference %.2g", step, res.LossShadow, snap.LossShadow, d)
		if !(d <= 2e-4*math.Abs(float64(snap.LossShadow))) {
			t.Errorf("step %d: loss %v, CPU trainer %v", step, res.LossShadow, snap.LossShadow)
		}
	}
	// AdamW moves every weight by about the learning rate whatever the
	// gradient's size, so where a tiny gradient's sign differs (it sums in
	// another order) the weights part by up to twice the steps' rates. The
	// key bias's gradient is zero but for rounding (softmax ignores a shift
	// common to a row), so that bias is rounding noise on both sides: no
	// bound on the relative norm can hold for it, the per-element one does.
	var lrSum float64
	for step := 1; step <= steps; step++ {
		lrSum += cfg.Optimizer.AdamW.At(step)
	}
	weightTol := tolerance{Rel: 1.0 / 64, Abs: 0.05, Floor: 2 * lrSum, Norm: math.Inf(1)}
	stateTol := tolerance{Rel: 1.0 / 64, Abs: 0.05, Norm: 2e-2}
	after := checkpointValues(t, tr)
	for _, p := range cfg.Model.Params() {
		got, err := b.Shadow.Read(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		assertNearBF16(t, "after training, "+p.Name, got, after[p.Name], weightTol)
		for _, suffix := range []string{".m", ".v"} {
			got, err := b.Shadow.Read(p.Name + suffix)
			if err != nil {
				t.Fatal(err)
			}
			assertNearBF16(t, "after training, "+p.Name+suffix, got, after[p.Name+suffix], stateTol)
		}
	}
}
