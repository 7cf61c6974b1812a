package main

import (
	"encoding/json"
	"testing"

	"lcttop/codec"
	"lcttop/session"
)

// TestClassFigureCodec checks a class's "codec" in a JSON line: its
// tensors' choice where they share one, "mixed" where they differ, and a
// checkpoint's tensors not coded by their dtype.
func TestClassFigureCodec(t *testing.T) {
	ts := []session.TensorStats{
		{Name: "a", Class: session.ClassWeight, Preset: codec.High, Distribution: codec.Laplace},
		{Name: "b", Class: session.ClassWeight, Preset: codec.High, Distribution: codec.Laplace},
		{Name: "c", Class: session.ClassMomentum, Preset: codec.Auto, Distribution: codec.Empirical},
		{Name: "d", Class: session.ClassMomentum, Preset: codec.Auto, Distribution: codec.Gaussian},
		{Name: "e", Class: session.ClassOther, AsIs: true, DType: "I64"},
		{Name: "f", Class: session.ClassOther, AsIs: true, DType: "I64", Preset: codec.High},
		{Name: "g", Class: session.ClassActivation, AsIs: true, DType: "F32"},
		{Name: "h", Class: session.ClassActivation, Preset: codec.Clean, Distribution: codec.Gaussian, DType: "BF16"},
	}
	want := map[session.TensorClass]string{
		session.ClassWeight:     "high/laplace",
		session.ClassMomentum:   "mixed",
		session.ClassOther:      "as-is/I64",
		session.ClassActivation: "mixed",
	}
	figs := classFigures(ts)
	if len(figs) != len(want) {
		t.Fatalf("%d classes, want %d", len(figs), len(want))
	}
	for _, f := range figs {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Codec string }
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Codec != want[f.Class] {
			t.Errorf("class %s: codec %q, want %q (%s)", f.Class, got.Codec, want[f.Class], b)
		}
	}
}
