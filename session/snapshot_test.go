package session

import (
	"encoding/json"
	"strings"
	"testing"

	"lcttop/codec"
)

// TestTensorStatsJSON checks a coded tensor's codec and an uncoded one's
// "as-is" go through JSON and back unchanged.
func TestTensorStatsJSON(t *testing.T) {
	for _, in := range []TensorStats{
		{Name: "w", Class: ClassWeight, Elements: 7, Preset: codec.High, Distribution: codec.Laplace, Raw: true},
		{Name: "step", Class: ClassOther, Elements: 1, DType: "I64", AsIs: true, Raw: true},
	} {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		want := `"preset":"high","distribution":"laplace"`
		if in.AsIs {
			want = `"preset":"as-is","distribution":"I64"`
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: %s, want %s", in.Name, b, want)
		}
		var out TensorStats
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if out.Name != in.Name || out.Codec() != in.Codec() || out.AsIs != in.AsIs || out.DType != in.DType || out.CodecLabel() != in.CodecLabel() {
			t.Errorf("%s: %+v back as %+v", in.Name, in, out)
		}
	}
	var ts TensorStats
	if err := json.Unmarshal([]byte(`{"preset":"fast","distribution":"gaussian"}`), &ts); err == nil {
		t.Error("an unknown preset read without an error")
	}
}

// TestCategoryText checks the memory categories' JSON names, as map keys.
func TestCategoryText(t *testing.T) {
	b, err := json.Marshal(map[Category]int64{OptimizerState: 3, Weights: 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"optimizer_state":3,"weights":1}` {
		t.Errorf("categories as JSON keys: %s", b)
	}
	var back map[Category]int64
	if err := json.Unmarshal(b, &back); err != nil || back[OptimizerState] != 3 || back[Weights] != 1 {
		t.Errorf("read back %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"gpu":1}`), &back); err == nil {
		t.Error("an unknown category read without an error")
	}
}
