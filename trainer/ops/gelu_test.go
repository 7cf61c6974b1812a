package ops

import (
	"math"
	"testing"
)

const (
	geluK64 = 0.7978845608028654
	geluA64 = 0.044715
)

func geluRef(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = 0.5 * v * (1 + math.Tanh(geluK64*(v+geluA64*v*v*v)))
	}
	return y
}

func geluBackwardRef(dy, x []float64) []float64 {
	dx := make([]float64, len(x))
	for i, v := range x {
		t := math.Tanh(geluK64 * (v + geluA64*v*v*v))
		dx[i] = dy[i] * (0.5*(1+t) + 0.5*v*(1-t*t)*geluK64*(1+3*geluA64*v*v))
	}
	return dx
}

func TestGELUGradientReference(t *testing.T) {
	r := newRand(20)
	x, dy := randF64(r, 20), randF64(r, 20)
	x[0], x[1] = 0, -6
	assertGradient(t, "x", x, geluBackwardRef(dy, x), func() float64 { return dotF64(dy, geluRef(x)) })
}

func TestGELUMatchesReference(t *testing.T) {
	r := newRand(21)
	x, dy := randBF16(r, 1000, 2), randBF16(r, 1000, 1)
	y := make([]uint16, len(x))
	GELUForward(y, x)
	assertClose(t, "y", y, geluRef(f64s(x)), 1.0/128, 1e-5)
	dx := make([]uint16, len(x))
	GELUBackward(dx, dy, x)
	assertClose(t, "dx", dx, geluBackwardRef(f64s(dy), f64s(x)), 1.0/128, 1e-5)
	// In place gives the same bits.
	y2 := append([]uint16(nil), x...)
	GELUForward(y2, y2)
	dx2 := append([]uint16(nil), dy...)
	GELUBackward(dx2, dx2, x)
	for i := range x {
		if y2[i] != y[i] || dx2[i] != dx[i] {
			t.Fatalf("element %d: in-place result differs", i)
		}
	}
}

func TestGELUDeterministicAcrossWorkers(t *testing.T) {
	r := newRand(22)
	x, dy := randBF16(r, 20000, 2), randBF16(r, 20000, 1)
	sameForWorkers(t, "gelu", func() [][]uint16 {
		y, dx := make([]uint16, len(x)), make([]uint16, len(x))
		GELUForward(y, x)
		GELUBackward(dx, dy, x)
		return [][]uint16{y, dx}
	})
}
