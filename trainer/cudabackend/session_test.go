package cudabackend

import (
	"context"
	"slices"
	"testing"
	"time"

	"lcttop/codec"
	"lcttop/session"
	"lcttop/trainer"
	"lcttop/trainer/optim"
)

// newTestSession is a session of the test model on a device of its own,
// with the GPU codec (on the GPU, or the CPU emulation), every weight
// compared every step.
func newTestSession(t *testing.T, steps int) *Session {
	t.Helper()
	g := freshGPU(t)
	c, err := OpenCodec("gpu", g)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSession(g.Compute(), TrainOptions{
		Config: Config{Model: testModel, Batch: 2, SeqLen: 16, Optimizer: testAdamW()},
		Steps:  steps, Seed: 5, Data: testData(t, 16), CheckEvery: 1,
		LCT: &LCTOptions{Codec: c},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.FigureEvery = 0 // every snapshot with fresh figures
	return s
}

// next waits for a snapshot past step (or any, step < 0).
func next(t *testing.T, s *Session, step int) session.Snapshot {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case snap, ok := <-s.Snapshots():
			if !ok {
				t.Fatal("snapshots closed")
			}
			if snap.Err != "" {
				t.Fatal(snap.Err)
			}
			if snap.Step > step {
				return snap
			}
		case <-deadline:
			t.Fatalf("no snapshot past step %d", step)
		}
	}
}

// A session on the GPU steps, pauses, takes single steps, and applies a
// class change and a single tensor's change at a step boundary: the
// figures show the new codecs, the tensors are encoded again on the device,
// and the LCT run stays bit-identical to the shadow at every step, weights
// included. The teaching view's detail reaches every block.
func TestSessionCodecChangesKeepRunsIdentical(t *testing.T) {
	s := newTestSession(t, 6)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	s.Pause()
	go func() { done <- s.Run(ctx) }()
	s.StepOnce()
	snap := next(t, s, 0)
	if snap.Step != 1 || !snap.BitIdentical || snap.WeightsChecked != 1 || snap.GPU == nil {
		t.Fatalf("after one step: step %d, identical %v, weights checked %d, gpu %v", snap.Step, snap.BitIdentical, snap.WeightsChecked, snap.GPU)
	}
	select {
	case extra := <-s.Snapshots():
		t.Fatalf("paused session took step %d", extra.Step)
	case <-time.After(200 * time.Millisecond):
	}

	laplace := session.ClassCodec{Preset: codec.High, Dist: codec.Laplace}
	if err := s.SetClassCodec(session.ClassAdamV, laplace); err != nil {
		t.Fatal(err)
	}
	var one string
	for _, ts := range snap.Tensors {
		if ts.Class == session.ClassWeight && !ts.Raw {
			one = ts.Name
			break
		}
	}
	powerlaw := session.ClassCodec{Preset: codec.Clean, Dist: codec.PowerLaw}
	if err := s.SetTensorCodec(one, powerlaw); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTensorCodec("act.none", powerlaw); err == nil {
		t.Error("a change of an activation was taken")
	}
	// Applied while paused: the same step, new figures. The two changes
	// may be applied at one turn or at two (the class change can wake the
	// session before the tensor change is asked for): the snapshot wanted
	// is the one after both.
	changed := next(t, s, -1)
	for !tensorOn(changed, one, powerlaw) {
		changed = next(t, s, -1)
	}
	if changed.Step != 1 {
		t.Fatalf("the change took a step: %d", changed.Step)
	}
	check := func(snap session.Snapshot) {
		t.Helper()
		for _, ts := range snap.Tensors {
			want := trainer.DefaultClassCodec[ts.Class]
			switch {
			case ts.Name == one:
				want = powerlaw
			case ts.Class == session.ClassAdamV:
				want = laplace
			}
			if ts.Preset != want.Preset || ts.Distribution != want.Dist {
				t.Errorf("step %d: %s on %s/%s, want %s", snap.Step, ts.Name, ts.Preset, ts.Distribution, want)
			}
		}
	}
	check(changed)
	// Encoded again, not only labelled: the device's tensors carry the
	// new codebooks and layouts.
	for _, ts := range changed.Tensors {
		want, ok := map[bool]session.ClassCodec{true: powerlaw, false: laplace}[ts.Name == one], ts.Name == one || ts.Class == session.ClassAdamV
		if !ok || ts.Raw {
			continue
		}
		d, err := s.Detail(ts.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d.Codebook.Dist != want.Dist || d.Layout.Preset != want.Preset {
			t.Errorf("%s encoded with %s/%s, want %s", ts.Name, d.Layout.Preset, d.Codebook.Dist, want)
		}
	}
	if cc, ok := s.TensorCodec(one); !ok || cc != powerlaw || s.ClassCodec(session.ClassAdamV) != laplace {
		t.Errorf("settings read back: %v %v, %v", cc, ok, s.ClassCodec(session.ClassAdamV))
	}

	s.Resume()
	var last session.Snapshot
	for last.Step < 6 {
		last = next(t, s, last.Step)
		if !last.BitIdentical || last.WeightsChecked != last.Step {
			t.Fatalf("step %d: identical %v (%s), weights checked at %d", last.Step, last.BitIdentical, last.Mismatch, last.WeightsChecked)
		}
	}
	check(last)
	if !last.Finished {
		t.Error("the last step's snapshot does not say the run is over")
	}

	// Detail: every block, its values those of Values.
	var big session.TensorStats
	for _, ts := range last.Tensors {
		if !ts.Raw && ts.Elements > big.Elements {
			big = ts
		}
	}
	all, err := s.Values(big.Name)
	if err != nil || len(all) != big.Elements {
		t.Fatalf("values of %s: %d, %v", big.Name, len(all), err)
	}
	d, err := s.Detail(big.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.N != big.Elements || d.Blocks < 1 || d.Layout.BlockSize == 0 {
		t.Fatalf("detail of %s: n %d, %d blocks, layout %+v", big.Name, d.N, d.Blocks, d.Layout)
	}
	for b := range d.Blocks {
		db, err := s.Detail(big.Name, b)
		if err != nil {
			t.Fatal(err)
		}
		lo := b * d.Layout.BlockSize
		if db.Block != b || !slices.Equal(db.Values, all[lo:min(lo+d.Layout.BlockSize, len(all))]) {
			t.Errorf("%s block %d: %d values differ from Values'", big.Name, b, len(db.Values))
		}
	}
	if _, err := s.Detail(big.Name, d.Blocks); err == nil {
		t.Error("a block past the last was given")
	}
	s.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func testAdamW() optimizerSettings {
	return optimizerSettings{AdamW: &optim.AdamW{Schedule: optim.Schedule{LR: 3e-3}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}}
}

// tensorOn reports whether snap shows tensor name on codec cc.
func tensorOn(snap session.Snapshot, name string, cc session.ClassCodec) bool {
	for _, ts := range snap.Tensors {
		if ts.Name == name {
			return ts.Preset == cc.Preset && ts.Distribution == cc.Dist
		}
	}
	return false
}
