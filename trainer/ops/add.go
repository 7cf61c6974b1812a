package ops

import (
	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// Add computes dst = bf16(a + b) element by element (the residual
// connection, and gradients meeting at a branch); dst may be a or b.
func Add(dst, a, b []uint16) {
	par.For(len(dst), 4096, func(lo, hi int) { vec.Add(dst[lo:hi], a[lo:hi], b[lo:hi]) })
}
