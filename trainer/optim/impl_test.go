package optim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"lcttop/trainer/internal/vec"
)

// specials are patterns the updates must carry as the scalar loop does.
var specials = []uint16{0x0000, 0x8000, 0x0001, 0x807f, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f7f, 0xff7f}

func randWithSpecials(r *rand.Rand, n int, scale float64) []uint16 {
	v := randTensor(r, n, scale)
	for i := range v {
		if r.IntN(50) == 0 {
			v[i] = specials[r.IntN(len(specials))]
		}
	}
	return v
}

// sameBF16: the same bits, or both NaN (which NaN payload survives where
// two meet is not fixed by Go).
func sameBF16(a, b uint16) bool { return a == b || a&0x7fff > 0x7f80 && b&0x7fff > 0x7f80 }

// TestUpdatesEveryImplementation: each vector implementation gives the
// plain Go loop's bits, on lengths that leave a tail for the loop.
func TestUpdatesEveryImplementation(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const n = 40013
	w, m, v, g := randWithSpecials(r, n, 0.05), randWithSpecials(r, n, 0.01), randWithSpecials(r, n, 1e-4), randWithSpecials(r, n, 0.02)
	adam := AdamW{Schedule: Schedule{LR: 3e-3}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}.Step(3, true)
	sgd := SGD{Schedule: Schedule{LR: 0.1}, Momentum: 0.9, WeightDecay: 0.01}.Step(3, true)
	run := func(name string) [][]uint16 {
		restore, err := vec.Use(name)
		if err != nil {
			t.Fatal(err)
		}
		defer restore()
		w1, m1, v1 := slices.Clone(w), slices.Clone(m), slices.Clone(v)
		adam.Update(w1, m1, v1, g)
		w2, m2 := slices.Clone(w), slices.Clone(m)
		sgd.Update(w2, m2, g)
		return [][]uint16{w1, m1, v1, w2, m2}
	}
	want := run("go")
	for _, name := range vec.Names() {
		got := run(name)
		for j := range want {
			for i := range want[j] {
				if !sameBF16(got[j][i], want[j][i]) {
					t.Fatalf("%s: output %d element %d = %#04x, the Go loop gives %#04x", name, j, i, got[j][i], want[j][i])
				}
			}
		}
	}
}
