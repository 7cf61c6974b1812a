package codec

import (
	"fmt"
	"testing"
)

// TestSteadyStateAllocations: re-encoding and re-decoding tensors of the same
// shape into the same destination allocates nothing, on one worker or many.
func TestSteadyStateAllocations(t *testing.T) {
	src := gaussianBF16(3*65536+1000, 1, 0.02)
	copy(src[500:], randomBF16(3000, 2)) // spills too
	h := SampleHistogram(src)
	cb := FitCodebook(Laplace, &h)
	dst := make([]uint16, len(src))
	for _, p := range Presets {
		l := ChooseLayout(p, &cb, &h)
		for _, workers := range []int{1, 2, 4} {
			name := fmt.Sprintf("%v Workers=%d", p, workers)
			e := &Encoder{Workers: workers}
			d := &Decoder{Workers: workers}
			var enc Tensor
			if err := e.Encode(&enc, src, cb, l); err != nil {
				t.Fatal(err)
			}
			if enc.Stats.Spilled == 0 {
				t.Fatalf("%s: want a tensor that spills", name)
			}
			if a := testing.AllocsPerRun(20, func() {
				if err := e.Encode(&enc, src, cb, l); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("%s: Encoder.Encode allocates %v times per call", name, a)
			}
			if a := testing.AllocsPerRun(20, func() {
				if err := d.Decode(&enc, dst); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("%s: Decoder.Decode allocates %v times per call", name, a)
			}
		}
	}
}
