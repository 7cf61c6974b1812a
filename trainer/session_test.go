package trainer

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"lcttop/codec"
	"lcttop/session"
)

func statsOf(t *testing.T, s session.Snapshot, name string) session.TensorStats {
	t.Helper()
	for _, ts := range s.Tensors {
		if ts.Name == name {
			return ts
		}
	}
	t.Fatalf("no tensor %s in step %d's snapshot", name, s.Step)
	return session.TensorStats{}
}

func wantCodec(t *testing.T, s session.Snapshot, name string, cc session.ClassCodec) {
	t.Helper()
	if ts := statsOf(t, s, name); ts.Preset != cc.Preset || ts.Distribution != cc.Dist {
		t.Fatalf("step %d: %s on %s/%s, want %s", s.Step, name, ts.Preset, ts.Distribution, cc)
	}
}

// TestTensorCodecKeepsRunsIdentical overrides single tensors' codecs
// between steps (a weight, an Adam state, an activation), then removes an
// override, comparing every weight and state with the shadow's after every
// step: the override reaches exactly the tensor named, and the runs stay
// bit-identical.
func TestTensorCodecKeepsRunsIdentical(t *testing.T) {
	cfg := quickConfig("adamw")
	cfg.CheckEvery = 1
	tr := newTrainer(t, cfg)
	class := tr.ClassCodec(session.ClassAdamV)
	steps(t, tr, 2)

	laplaceHigh := session.ClassCodec{Preset: codec.High, Dist: codec.Laplace}
	powerMedium := session.ClassCodec{Preset: codec.Medium, Dist: codec.PowerLaw}
	for name, cc := range map[string]session.ClassCodec{"blk0.fc.w.v": laplaceHigh, "wte": powerMedium, "act.blk1.qkv": laplaceHigh} {
		if err := tr.SetTensorCodec(name, cc); err != nil {
			t.Fatal(err)
		}
		if got, ok := tr.TensorCodec(name); !ok || got != cc {
			t.Fatalf("TensorCodec(%s) = %v, %v", name, got, ok)
		}
	}
	s := steps(t, tr, 3)[2]
	wantCodec(t, s, "blk0.fc.w.v", laplaceHigh)
	wantCodec(t, s, "wte", powerMedium)
	wantCodec(t, s, "act.blk1.qkv", laplaceHigh)
	wantCodec(t, s, "blk0.qkv.w.v", class) // same class, no override
	wantCodec(t, s, "act.blk0.qkv", tr.ClassCodec(session.ClassActivation))
	if !s.BitIdentical || s.WeightsChecked != s.Step {
		t.Fatalf("step %d: identical %v, weights checked at %d: %s", s.Step, s.BitIdentical, s.WeightsChecked, s.Mismatch)
	}
	for b := range 2 { // both chunks of blk0.fc.w.v carry the override
		d, err := tr.Detail("blk0.fc.w.v", b)
		if err != nil {
			t.Fatal(err)
		}
		if d.Codebook.Dist != codec.Laplace || d.Layout.Preset != codec.High {
			t.Fatalf("block %d of blk0.fc.w.v encoded %s/%s", b, d.Layout.Preset, d.Codebook.Dist)
		}
	}

	// A class change leaves the override alone; removing it follows the class.
	other := session.ClassCodec{Preset: codec.Clean, Dist: codec.Empirical}
	if err := tr.SetClassCodec(session.ClassAdamV, other); err != nil {
		t.Fatal(err)
	}
	s = steps(t, tr, 1)[0]
	wantCodec(t, s, "blk0.fc.w.v", laplaceHigh)
	wantCodec(t, s, "blk0.qkv.w.v", other)
	if err := tr.ClearTensorCodec("blk0.fc.w.v"); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.TensorCodec("blk0.fc.w.v"); ok {
		t.Fatal("ClearTensorCodec left an override")
	}
	if err := tr.ClearTensorCodec("nope"); err == nil {
		t.Fatal("an unknown tensor's override was cleared")
	}
	s = steps(t, tr, 2)[1]
	wantCodec(t, s, "blk0.fc.w.v", other)
	if !s.BitIdentical || s.WeightsChecked != s.Step {
		t.Fatalf("step %d: identical %v, weights checked at %d: %s", s.Step, s.BitIdentical, s.WeightsChecked, s.Mismatch)
	}

	if err := tr.SetTensorCodec("nope", laplaceHigh); err == nil {
		t.Fatal("unknown tensor accepted")
	}
	if err := tr.SetTensorCodec("wte", session.ClassCodec{Preset: 7}); err == nil {
		t.Fatal("preset 7 accepted")
	}
}

// TestTensorCodecWhilePaused applies an override at once while Run is
// paused: the next snapshot shows it without a step.
func TestTensorCodecWhilePaused(t *testing.T) {
	tr := newTrainer(t, quickConfig("adamw"))
	tr.Pause()
	done := make(chan error, 1)
	go func() { done <- tr.Run(context.Background()) }()
	ch := tr.Snapshots()
	tr.StepOnce()
	if s := next(t, ch); s.Step != 1 {
		t.Fatalf("StepOnce gave step %d", s.Step)
	}
	cc := session.ClassCodec{Preset: codec.High, Dist: codec.Gaussian}
	if err := tr.SetTensorCodec("wpe.m", cc); err != nil {
		t.Fatal(err)
	}
	s := next(t, ch)
	if s.Step != 1 {
		t.Fatalf("re-encoding took a step: %d", s.Step)
	}
	wantCodec(t, s, "wpe.m", cc)
	wantCodec(t, s, "wte.m", tr.ClassCodec(session.ClassAdamM))
	tr.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestHoldAtEnd: with HoldAtEnd, Run marks its last snapshot Finished,
// re-encodes the final state on a codec change without stepping, ignores
// StepOnce, and returns on Stop.
func TestHoldAtEnd(t *testing.T) {
	cfg := quickConfig("sgd")
	cfg.Steps, cfg.HoldAtEnd = 2, true
	tr := newTrainer(t, cfg)
	done := make(chan error, 1)
	go func() { done <- tr.Run(context.Background()) }()
	ch := tr.Snapshots()
	s := next(t, ch)
	for !s.Finished {
		s = next(t, ch)
	}
	if s.Step != 2 {
		t.Fatalf("finished at step %d, want 2", s.Step)
	}
	tr.StepOnce()
	cc := session.ClassCodec{Preset: codec.Medium, Dist: codec.Laplace}
	if err := tr.SetClassCodec(session.ClassWeight, cc); err != nil {
		t.Fatal(err)
	}
	s = next(t, ch)
	if s.Step != 2 || !s.Finished {
		t.Fatalf("after the change: step %d, finished %v", s.Step, s.Finished)
	}
	wantCodec(t, s, "wte", cc)
	select {
	case s := <-ch:
		t.Fatalf("a finished run emitted step %d", s.Step)
	case <-time.After(100 * time.Millisecond):
	}
	tr.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestDetailBlocks reads every block of a two-block tensor: each holds its
// chunk of the shadow's values in codec order, and the blocks' counts add
// up to the tensor.
func TestDetailBlocks(t *testing.T) {
	tr := newTrainer(t, quickConfig("adamw"))
	steps(t, tr, 2)
	const name = "blk0.fc.w.m"
	shadow := tr.shadow.byName["blk0.fc.w"].state[0].dense
	seen := 0
	for b := 0; ; b++ {
		d, err := tr.Detail(name, b)
		if b == 2 {
			if err == nil || !strings.Contains(err.Error(), "out of range") {
				t.Fatalf("block 2 of 2: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Block != b || d.Blocks != 2 || d.N != len(shadow) || d.Class != session.ClassAdamM {
			t.Fatalf("block %d: Block %d Blocks %d N %d class %s", b, d.Block, d.Blocks, d.N, d.Class)
		}
		want := slices.Clone(shadow[b*chunkElems : (b+1)*chunkElems])
		if !slices.Equal(d.Values, want[:len(d.Values)]) {
			t.Fatalf("block %d differs from the shadow's values", b)
		}
		seen += len(d.Values)
	}
	if seen != len(shadow) {
		t.Fatalf("blocks hold %d values, the tensor %d", seen, len(shadow))
	}
	if _, err := tr.Detail(name, -1); err == nil {
		t.Fatal("block -1 accepted")
	}
}

// TestValues returns a stored tensor whole, in tensor order, equal to the
// shadow's.
func TestValues(t *testing.T) {
	tr := newTrainer(t, quickConfig("adamw"))
	steps(t, tr, 2)
	for _, name := range []string{"wte", "blk0.fc.w.v", "blk0.ln1.g"} {
		got, err := tr.Values(name)
		if err != nil {
			t.Fatal(err)
		}
		var want []uint16
		for _, s := range tr.shadow.storedSlots() {
			if s.name == name {
				want = s.dense
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d values differ from the shadow's %d", name, len(got), len(want))
		}
	}
	if _, err := tr.Values("act.blk0.fc"); err == nil || !strings.Contains(err.Error(), "activations") {
		t.Fatalf("activation values: %v", err)
	}
	if _, err := tr.Values("nope"); err == nil {
		t.Fatal("unknown tensor accepted")
	}
}
