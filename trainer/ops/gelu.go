package ops

import (
	"math"

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

// GELUForward computes y = bf16(0.5·x·(1 + tanh(k·(x + a·x³)))) element by
// element in float32; y may be x itself.
func GELUForward(y, x []uint16) {
	par.For(len(x), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := bf16.ToFloat32(x[i])
			u := float32(geluK * (v + float32(geluA*float32(float32(v*v)*v))))
			y[i] = bf16.FromFloat32(float32(float32(0.5*v) * (1 + tanh32(u))))
		}
	})
}

// GELUBackward computes dx = bf16(dy·gelu'(x)) with, for t = tanh(u),
//
//	gelu'(x) = 0.5·(1+t) + 0.5·x·(1−t²)·k·(1 + 3a·x²)
//
// in float32; dx may be dy itself.
func GELUBackward(dx, dy, x []uint16) {
	par.For(len(x), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := bf16.ToFloat32(x[i])
			v2 := float32(v * v)
			u := float32(geluK * (v + float32(geluA*float32(v2*v))))
			t := tanh32(u)
			du := float32(geluK * (1 + float32(3*geluA*v2)))
			d := float32(0.5*(1+t)) + float32(float32(float32(0.5*v)*(1-float32(t*t)))*du)
			dx[i] = bf16.FromFloat32(float32(bf16.ToFloat32(dy[i]) * d))
		}
	})
}
