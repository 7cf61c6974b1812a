// Package optim updates BF16 parameters and optimizer states in place.
//
// The CUDA kernels (gpu/) implement the same formulas and must give the same
// bits, so each formula is fixed operation by operation: float32 arithmetic,
// every product and quotient rounded on its own (never fused into an FMA; in
// CUDA: __fmul_rn, __fadd_rn, __fsub_rn, __fdiv_rn, __fsqrt_rn), evaluated in
// the order written, and each stored value rounded once to BF16, nearest-even.
// Per-step scalars (learning rate, bias corrections) are computed on the host
// in float64 and passed as float32, so both backends receive identical bits.
//
// Updates are element-wise: a tensor may be updated whole or block by block
// (the LCT path decodes, updates and re-encodes one codec block at a time)
// with identical results.
package optim

import "math"

// sqrt32 is the correctly rounded float32 square root (sqrtf, __fsqrt_rn):
// the float64 root rounded to float32 is correctly rounded.
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// grain is the smallest share of elements worth a goroutine.
const grain = 8192

// Schedule is the learning rate at step t (counted from 1): a linear warmup
// over Warmup steps, then constant.
type Schedule struct {
	LR     float64
	Warmup int
}

// At returns the rate for step t, in float64.
func (s Schedule) At(t int) float64 {
	if s.Warmup > 0 && t < s.Warmup {
		return s.LR * float64(t) / float64(s.Warmup)
	}
	return s.LR
}
