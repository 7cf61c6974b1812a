package trainer

import (
	"slices"
	"testing"

	"lcttop/codec"
)

// A per-tensor override re-encodes that tensor alone, is reported by
// TensorCodec and the next snapshot, and the zero ClassCodec removes it.
func TestSetTensorCodec(t *testing.T) {
	tr := newTrainer(t, quickConfig("adamw"))
	steps(t, tr, 1)
	const name = "blk0.fc.w"
	want := ClassCodec{Preset: codec.High, Dist: codec.Laplace}
	if err := tr.SetTensorCodec(name, want); err != nil {
		t.Fatal(err)
	}
	if got, ok := tr.TensorCodec(name); !ok || got != want {
		t.Fatalf("TensorCodec = %v, %v", got, ok)
	}
	if _, ok := tr.TensorCodec("blk0.proj.w"); ok {
		t.Fatal("an override reported for a tensor that has none")
	}
	s := steps(t, tr, 1)[0]
	for _, ts := range s.Tensors {
		overridden := ts.Name == name
		if got := ts.Preset + "/" + ts.Distribution; overridden != (got == want.String()) {
			t.Fatalf("%s is %s after overriding %s with %s", ts.Name, got, name, want)
		}
	}
	d, err := tr.Detail(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Codebook.Dist != codec.Laplace || d.Layout.Preset != codec.High {
		t.Fatalf("detail codec %s/%s", d.Layout.Preset, d.Codebook.Dist)
	}
	if !s.BitIdentical {
		t.Fatalf("an override changed the training: %s", s.Mismatch)
	}

	if err := tr.SetTensorCodec(name, ClassCodec{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.TensorCodec(name); ok {
		t.Fatal("the zero ClassCodec did not remove the override")
	}
	s = steps(t, tr, 1)[0]
	for _, ts := range s.Tensors {
		if ts.Name == name && ts.Preset+"/"+ts.Distribution != tr.ClassCodec(ClassWeight).String() {
			t.Fatalf("%s still %s/%s after the override was removed", name, ts.Preset, ts.Distribution)
		}
	}
	if err := tr.SetTensorCodec("nope", want); err == nil {
		t.Fatal("override of an unknown tensor accepted")
	}
	if err := tr.SetTensorCodec(name, ClassCodec{Preset: 9}); err == nil {
		t.Fatal("preset 9 accepted")
	}
}

// Values decodes a tensor whole, in tensor order: the shadow run's values.
func TestValues(t *testing.T) {
	tr := newTrainer(t, quickConfig("adamw"))
	steps(t, tr, 2)
	for _, name := range []string{"wte", "wte.m", "blk0.qkv.w.v"} {
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
	if _, err := tr.Values("act.blk0.fc"); err == nil {
		t.Fatal("an activation's values given")
	}
}
