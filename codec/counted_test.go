package codec

import (
	"bytes"
	"testing"

	"lcttop/internal/testtensors"
)

// TestEncodeCounted: encoding with the blocks' split histograms given
// (counted by BlockSplitHistograms, whose sum plans the tensor) gives the
// tensor Encode gives, byte for byte and stats alike, and the sum is every
// value's split histogram.
func TestEncodeCounted(t *testing.T) {
	type input struct {
		name string
		src  []uint16
	}
	inputs := []input{
		{"gauss-one-block", gaussianBF16(5000, 1, 0.02)},
		{"gauss-blocks", gaussianBF16(3*65536+777, 2, 0.02)},
		{"gauss-whole-blocks", gaussianBF16(4*65536, 3, 1)},
		{"random", randomBF16(2*65536+1, 4)},
	}
	for _, path := range testtensors.Files(t) {
		for _, nt := range testtensors.LoadBF16(t, path) {
			if len(nt.Values) > 65536 {
				inputs = append(inputs, input{baseName(path) + "/" + nt.Name, nt.Values})
				break
			}
		}
	}
	for _, in := range inputs {
		for _, p := range []Preset{Auto, Medium} {
			opt := v3(p, Empirical)
			blocks, full := BlockSplitHistograms(nil, in.src, p)
			if want := FullSplitHistogram(in.src); full != want {
				t.Fatalf("%s %s: the blocks' histograms do not sum to every value's", in.name, p)
			}
			cb, layout, err := Plan(in.src, opt)
			if err != nil {
				t.Fatal(err)
			}
			sample := SampleHistogram(in.src)
			cb2, layout2, err := PlanHistograms(len(in.src), &full, &sample, opt)
			if err != nil || cb2 != cb || layout2 != layout {
				t.Fatalf("%s %s: plan from the blocks' histograms differs (%v)", in.name, p, err)
			}
			var e1, e2 Encoder
			var t1, t2 Tensor
			if err := e1.Encode(&t1, in.src, cb, layout); err != nil {
				t.Fatal(err)
			}
			if err := e2.EncodeCounted(&t2, in.src, cb, layout, blocks); err != nil {
				t.Fatal(err)
			}
			b1, err1 := t1.MarshalBinary()
			b2, err2 := t2.MarshalBinary()
			if err1 != nil || err2 != nil || !bytes.Equal(b1, b2) {
				t.Fatalf("%s %s: EncodeCounted's tensor differs from Encode's (%v, %v)", in.name, p, err1, err2)
			}
			if t1.Stats != t2.Stats {
				t.Fatalf("%s %s: stats differ: %+v, %+v", in.name, p, t1.Stats, t2.Stats)
			}
			checkStatsInvariants3(t, in.name, in.src, &t2)
			if len(blocks) > 0 {
				if err := e2.EncodeCounted(&t2, in.src, cb, layout, blocks[1:]); err == nil {
					t.Fatalf("%s %s: %d histograms for %d blocks accepted", in.name, p, len(blocks)-1, len(blocks))
				}
			}
		}
	}
}
