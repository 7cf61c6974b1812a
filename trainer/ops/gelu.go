package ops

import (
	"math"
	"sync"

	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
)

// GELU constants of the tanh approximation used by GPT-2.
const (
	geluK = float32(0.7978845608028654) // sqrt(2/π)
	geluA = float32(0.044715)
)

// tanh32 is tanh of a float32, correctly rounded from float64.
func tanh32(u float32) float32 { return float32(math.Tanh(float64(u))) }

// geluOf is the forward formula for one BF16 input.
func geluOf(x uint16) uint16 {
	v := bf16.ToFloat32(x)
	u := float32(geluK * (v + float32(geluA*float32(float32(v*v)*v))))
	return bf16.FromFloat32(float32(float32(0.5*v) * (1 + tanh32(u))))
}

// geluSlopeOf is gelu'(x) in float32 for one BF16 input.
func geluSlopeOf(x uint16) float32 {
	v := bf16.ToFloat32(x)
	v2 := float32(v * v)
	u := float32(geluK * (v + float32(geluA*float32(v2*v))))
	t := tanh32(u)
	du := float32(geluK * (1 + float32(3*geluA*v2)))
	return float32(0.5*(1+t)) + float32(float32(float32(0.5*v)*(1-float32(t*t)))*du)
}

// Both depend on the 16-bit input alone, so each is computed once for all
// 65,536 patterns and looked up: the same bits as computing it per element.
var (
	geluOnce   sync.Once
	geluTable  []uint16
	geluSlopes []float32
)

// GELUTables is GELU's output and gradient for every BF16 input, as
// GELUForward and GELUBackward look them up (the GPU's kernels look up the
// same tables): fwd[x] = bf16(gelu(x)), slope[x] = gelu'(x) in float32.
// The tables are shared: do not change them.
func GELUTables() (fwd []uint16, slope []float32) { return geluTables() }

func geluTables() ([]uint16, []float32) {
	geluOnce.Do(func() {
		geluTable, geluSlopes = make([]uint16, 1<<16), make([]float32, 1<<16)
		for x := range 1 << 16 {
			geluTable[x] = geluOf(uint16(x))
			geluSlopes[x] = geluSlopeOf(uint16(x))
		}
	})
	return geluTable, geluSlopes
}

// GELUForward computes y = bf16(0.5·x·(1 + tanh(k·(x + a·x³)))) element by
// element in float32; y may be x itself.
func GELUForward(y, x []uint16) {
	table, _ := geluTables()
	par.For(len(x), 4096, func(lo, hi int) {
		xs, ys := x[lo:hi], y[lo:hi]
		for i, v := range xs {
			ys[i] = table[v]
		}
	})
}

// GELUBackward computes dx = bf16(dy·gelu'(x)) with, for t = tanh(u),
//
//	gelu'(x) = 0.5·(1+t) + 0.5·x·(1−t²)·k·(1 + 3a·x²)
//
// in float32; dx may be dy itself.
func GELUBackward(dx, dy, x []uint16) {
	_, slopes := geluTables()
	par.For(len(x), 4096, func(lo, hi int) {
		xs, dys, dxs := x[lo:hi], dy[lo:hi], dx[lo:hi]
		for i, v := range xs {
			dxs[i] = bf16.FromFloat32(float32(bf16.ToFloat32(dys[i]) * slopes[v]))
		}
	})
}
