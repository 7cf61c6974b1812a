package optim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
)

// r32 rounds a float64 to float32. Each float32 +, −, ·, / and sqrt equals
// the float64 operation on the same operands rounded once (float64 has more
// than twice float32's precision), so the references below evaluate the
// documented formulas independently of the code under test.
func r32(x float64) float64 { return float64(float32(x)) }

func f(v uint16) float64 { return float64(bf16.ToFloat32(v)) }

func randTensor(r *rand.Rand, n int, scale float64) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = bf16.FromFloat32(float32(r.NormFloat64() * scale))
	}
	return v
}

func TestAdamWFormulaExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	opt := AdamW{Schedule: Schedule{LR: 3e-3, Warmup: 5}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}
	n := 20000
	w, m, g := randTensor(r, n, 0.05), randTensor(r, n, 0.01), randTensor(r, n, 0.02)
	v := make([]uint16, n)
	for i := range v {
		v[i] = bf16.FromFloat32(float32(math.Abs(r.NormFloat64()) * 1e-4))
	}
	m[0], v[0], g[0] = 0, 0, 0 // a fresh state
	for _, step := range []int{1, 3, 7} {
		for _, decay := range []bool{true, false} {
			s := opt.Step(step, decay)
			w2, m2, v2 := slices.Clone(w), slices.Clone(m), slices.Clone(v)
			s.Update(w2, m2, v2, g)
			for i := range n {
				gi, wi := f(g[i]), f(w[i])
				mi := r32(r32(float64(s.Beta1)*f(m[i])) + r32(float64(s.OneMinusBeta1)*gi))
				vi := r32(r32(float64(s.Beta2)*f(v[i])) + r32(float64(s.OneMinusBeta2)*r32(gi*gi)))
				mh := r32(mi / float64(s.BiasCorr1))
				vh := r32(vi / float64(s.BiasCorr2))
				u := r32(r32(mh/r32(r32(math.Sqrt(vh))+float64(s.Eps))) + r32(float64(s.WeightDecay)*wi))
				ww := r32(wi - r32(float64(s.LR)*u))
				if m2[i] != bf16.FromFloat32(float32(mi)) || v2[i] != bf16.FromFloat32(float32(vi)) || w2[i] != bf16.FromFloat32(float32(ww)) {
					t.Fatalf("step %d decay %v element %d: got w %#04x m %#04x v %#04x, want %#04x %#04x %#04x",
						step, decay, i, w2[i], m2[i], v2[i], bf16.FromFloat32(float32(ww)), bf16.FromFloat32(float32(mi)), bf16.FromFloat32(float32(vi)))
				}
			}
		}
	}
}

func TestAdamWStepScalars(t *testing.T) {
	opt := AdamW{Schedule: Schedule{LR: 1e-3, Warmup: 10}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}
	s := opt.Step(5, true)
	if s.LR != float32(5e-4) || s.BiasCorr1 != float32(1-math.Pow(0.9, 5)) || s.BiasCorr2 != float32(1-math.Pow(0.99, 5)) || s.WeightDecay != float32(0.1) {
		t.Fatalf("scalars %+v", s)
	}
	if s := opt.Step(20, false); s.LR != float32(1e-3) || s.WeightDecay != 0 {
		t.Fatalf("after warmup, no decay: %+v", s)
	}
}

func TestSGDFormulaExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	opt := SGD{Schedule: Schedule{LR: 0.05}, Momentum: 0.9, WeightDecay: 1e-4}
	n := 20000
	w, m, g := randTensor(r, n, 0.05), randTensor(r, n, 0.01), randTensor(r, n, 0.02)
	for _, decay := range []bool{true, false} {
		s := opt.Step(1, decay)
		w2, m2 := slices.Clone(w), slices.Clone(m)
		s.Update(w2, m2, g)
		for i := range n {
			wi := f(w[i])
			d := r32(f(g[i]) + r32(float64(s.WeightDecay)*wi))
			mi := r32(r32(float64(s.Momentum)*f(m[i])) + d)
			ww := r32(wi - r32(float64(s.LR)*mi))
			if m2[i] != bf16.FromFloat32(float32(mi)) || w2[i] != bf16.FromFloat32(float32(ww)) {
				t.Fatalf("decay %v element %d: got w %#04x m %#04x", decay, i, w2[i], m2[i])
			}
		}
	}
}

// TestBlockwiseEqualsWhole: the LCT path updates block by block, the shadow
// whole; the results must be the same bits, whatever the worker count.
func TestBlockwiseEqualsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 50000
	w, m, v, g := randTensor(r, n, 0.05), randTensor(r, n, 0.01), make([]uint16, n), randTensor(r, n, 0.02)
	s := AdamW{Schedule: Schedule{LR: 1e-3}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}.Step(1, true)
	w1, m1, v1 := slices.Clone(w), slices.Clone(m), slices.Clone(v)
	s.Update(w1, m1, v1, g)
	old := par.SetWorkers(3)
	defer par.SetWorkers(old)
	for lo := 0; lo < n; lo += 4096 {
		hi := min(lo+4096, n)
		s.Update(w[lo:hi], m[lo:hi], v[lo:hi], g[lo:hi])
	}
	if !slices.Equal(w, w1) || !slices.Equal(m, m1) || !slices.Equal(v, v1) {
		t.Fatal("block-by-block update differs from the whole-tensor update")
	}
}

// TestOptimizersDescend: on f(w) = Σ w²/2 (gradient w) both optimizers
// shrink the weights; a sanity check that the formulas point downhill.
func TestOptimizersDescend(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	norm := func(w []uint16) (s float64) {
		for _, x := range w {
			s += f(x) * f(x)
		}
		return
	}
	w := randTensor(r, 1000, 1)
	m, v := make([]uint16, len(w)), make([]uint16, len(w))
	start := norm(w)
	adam := AdamW{Schedule: Schedule{LR: 0.05}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}
	for step := 1; step <= 50; step++ {
		adam.Step(step, false).Update(w, m, v, slices.Clone(w))
	}
	if end := norm(w); end > start/10 {
		t.Fatalf("AdamW: |w|² went %g -> %g", start, end)
	}
	w = randTensor(r, 1000, 1)
	clear(m)
	start = norm(w)
	sgd := SGD{Schedule: Schedule{LR: 0.05}, Momentum: 0.9}
	for step := 1; step <= 50; step++ {
		sgd.Step(step, false).Update(w, m, slices.Clone(w))
	}
	if end := norm(w); end > start/10 {
		t.Fatalf("SGD: |w|² went %g -> %g", start, end)
	}
}

func BenchmarkAdamWUpdate(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	n := 1 << 16
	w, m, v, g := randTensor(r, n, 0.05), randTensor(r, n, 0.01), make([]uint16, n), randTensor(r, n, 0.02)
	s := AdamW{Schedule: Schedule{LR: 1e-3}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}.Step(1, true)
	b.SetBytes(int64(2 * n * 4))
	for b.Loop() {
		s.Update(w, m, v, g)
	}
}
