package ops

import (
	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
)

// Add computes dst = bf16(a + b) element by element (the residual
// connection, and gradients meeting at a branch); dst may be a or b.
func Add(dst, a, b []uint16) {
	par.For(len(dst), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] = bf16.FromFloat32(bf16.ToFloat32(a[i]) + bf16.ToFloat32(b[i]))
		}
	})
}
