package ops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
)

// newRand is the tests' deterministic source.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// randBF16 draws n values from N(0, scale²), rounded to BF16.
func randBF16(r *rand.Rand, n int, scale float64) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = bf16.FromFloat32(float32(r.NormFloat64() * scale))
	}
	return v
}

// randF64 draws n values from N(0, 1).
func randF64(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

func f64s(v []uint16) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(bf16.ToFloat32(x))
	}
	return out
}

func bf16s(v []float64) []uint16 {
	out := make([]uint16, len(v))
	for i, x := range v {
		out[i] = bf16.FromFloat32(float32(x))
	}
	return out
}

// assertClose compares a BF16 result with its float64 reference: each
// element may differ by BF16 rounding (rtol) plus float32 accumulation error,
// bounded by atol times the largest reference magnitude.
func assertClose(t *testing.T, what string, got []uint16, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale float64
	for _, w := range want {
		scale = max(scale, math.Abs(w))
	}
	for i, w := range want {
		g := float64(bf16.ToFloat32(got[i]))
		if d := math.Abs(g - w); d > rtol*math.Abs(w)+atol*scale || math.IsNaN(g) {
			t.Fatalf("%s[%d] = %g, float64 reference %g (diff %g, scale %g)", what, i, g, w, d, scale)
		}
	}
}

// assertGradient checks an analytic float64 gradient against central finite
// differences of the float64 objective f at x.
func assertGradient(t *testing.T, what string, x []float64, grad []float64, f func() float64) {
	t.Helper()
	const h = 1e-6
	var scale float64
	for _, g := range grad {
		scale = max(scale, math.Abs(g))
	}
	for i := range x {
		old := x[i]
		x[i] = old + h
		up := f()
		x[i] = old - h
		down := f()
		x[i] = old
		num := (up - down) / (2 * h)
		if d := math.Abs(num - grad[i]); d > 1e-5*math.Abs(num)+1e-6*scale+1e-9 {
			t.Fatalf("%s: d/dx[%d] analytic %g, finite difference %g (diff %g)", what, i, grad[i], num, d)
		}
	}
}

// dotF64 is the objective Σ r·y used to turn a vector output into a scalar:
// its gradient with respect to y is r.
func dotF64(r, y []float64) float64 {
	var s float64
	for i := range y {
		s += r[i] * y[i]
	}
	return s
}

// sameForWorkers runs f with 1 and 3 workers and fails unless both produce
// the same bits: the op's result must not depend on the split.
func sameForWorkers(t *testing.T, what string, f func() [][]uint16) {
	t.Helper()
	old := par.SetWorkers(1)
	defer par.SetWorkers(old)
	a := f()
	par.SetWorkers(3)
	b := f()
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("%s: output %d differs between 1 and 3 workers", what, i)
		}
	}
}
