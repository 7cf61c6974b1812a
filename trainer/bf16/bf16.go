// Package bf16 converts between float32 and bfloat16 (BF16) bit patterns.
//
// The trainer stores every tensor as BF16 (uint16 bit patterns) and computes
// in float32; FromFloat32 rounds to nearest, ties to even, exactly as CUDA's
// __float2bfloat16_rn does, so the CPU and GPU backends round alike.
package bf16

import "math"

// ToFloat32 widens a BF16 bit pattern to float32 (exact).
func ToFloat32(v uint16) float32 { return math.Float32frombits(uint32(v) << 16) }

// FromFloat32 rounds f to the nearest BF16, ties to even. NaNs stay NaN
// (quiet, sign and top payload bits kept); overflow rounds to infinity.
func FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// FromFloat32s rounds src into dst (len(dst) must be at least len(src)).
func FromFloat32s(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = FromFloat32(f)
	}
}

// ToFloat32s widens src into dst (len(dst) must be at least len(src)).
func ToFloat32s(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = ToFloat32(v)
	}
}
