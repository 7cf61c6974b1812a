package session

import (
	"encoding/json"
	"testing"

	"lcttop/codec"
)

// TestClassCodecText checks every preset × distribution goes through JSON,
// as a value and as a map value, as "preset/dist" and back to itself, and
// that text naming no choice is refused.
func TestClassCodecText(t *testing.T) {
	for _, d := range codec.Distributions {
		for _, p := range codec.Presets {
			in := ClassCodec{Preset: p, Dist: d}
			want := `"` + p.String() + "/" + d.String() + `"`
			b, err := json.Marshal(in)
			if err != nil || string(b) != want {
				t.Fatalf("%+v as JSON: %s, %v; want %s", in, b, err, want)
			}
			var out ClassCodec
			if err := json.Unmarshal(b, &out); err != nil || out != in {
				t.Errorf("%s read back as %+v, %v", b, out, err)
			}
			m, err := json.Marshal(map[TensorClass]ClassCodec{ClassWeight: in})
			if err != nil || string(m) != `{"weight":`+want+`}` {
				t.Errorf("%+v in a map as JSON: %s, %v", in, m, err)
			}
			var back map[TensorClass]ClassCodec
			if err := json.Unmarshal(m, &back); err != nil || back[ClassWeight] != in {
				t.Errorf("%s read back as %v, %v", m, back, err)
			}
		}
	}
	for _, bad := range []string{`"auto"`, `"auto/"`, `"/empirical"`, `"fast/gaussian"`, `"auto/normal"`, `"auto/empirical/x"`, `""`} {
		var cc ClassCodec
		if err := json.Unmarshal([]byte(bad), &cc); err == nil {
			t.Errorf("%s read as %+v without an error", bad, cc)
		}
	}
}
