package cudabackend

import (
	"fmt"
	"testing"

	"lcttop/trainer"
)

// The comparison of the runs on the device finds a single flipped bit in
// any tensor, coded or kept as it is, and names the tensor, the index and
// both values; runs that agree compare equal.
func TestCheckWeightsFindsOneFlippedBit(t *testing.T) {
	dev := testDevice(t)
	m, err := trainer.LookupModel("tiny") // its layer norms are kept as they are (smallParamLimit)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: m, Batch: 1, SeqLen: 8, Optimizer: mustOptimizer(t, "adamw")}
	text := testData(t, cfg.SeqLen)
	b, err := newLockstep(dev, cfg, trainer.InitialValues(m, 5), &LCTOptions{Codec: testGPUCodec(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Step(text.TrainBatch(4, 1, cfg.Batch, cfg.SeqLen), 1); err != nil {
		t.Fatal(err)
	}
	if diff, err := b.CheckWeights(); err != nil || diff != "" {
		t.Fatalf("identical runs: %q, %v", diff, err)
	}
	ls := b.LCT.lct
	for _, name := range []string{"blk0.fc.w", "blk0.fc.w.v", "blk0.ln1.g"} {
		s := b.LCT.byName[trimState(name)].w
		for _, st := range b.LCT.byName[trimState(name)].state {
			if st.name == name {
				s = st
			}
		}
		if raw := ls.alwaysRaw(s) != 0; raw != (name == "blk0.ln1.g") {
			t.Fatalf("%s: kept as it is %v; the test wants blk0.ln1.g kept and the others coded", name, raw)
		}
		v, err := b.LCT.st.get(s)
		if err != nil {
			t.Fatal(err)
		}
		at := len(v) - 3
		was := v[at]
		v[at] ^= 0x0100 // the exponent's lowest bit
		if err := b.LCT.st.set(s, v); err != nil {
			t.Fatal(err)
		}
		diff, err := b.CheckWeights()
		want := fmt.Sprintf("%s[%d] = %#04x (LCT) vs %#04x (shadow)", name, at, v[at], was)
		if err != nil || diff != want {
			t.Errorf("one bit flipped: %q, %v; want %q", diff, err, want)
		}
		v[at] = was
		if err := b.LCT.st.set(s, v); err != nil {
			t.Fatal(err)
		}
		if diff, err := b.CheckWeights(); err != nil || diff != "" {
			t.Errorf("%s put back: %q, %v", name, diff, err)
		}
	}
}

// trimState is the parameter a state's name belongs to ("w.v" → "w").
func trimState(name string) string {
	for _, suf := range []string{".m", ".v"} {
		if len(name) > len(suf) && name[len(name)-len(suf):] == suf {
			return name[:len(name)-len(suf)]
		}
	}
	return name
}
