package cudabackend

import (
	"lcttop/gpu"
	"lcttop/gpu/gptkernel"
	"lcttop/session"
)

// scratchCat is the category of the kernels' temporary buffers.
const scratchCat = session.Activations

// linearLayer is ops.linearLayer on the device: y = x·Wᵀ + b with x N×In, W Out×In
// (nn.linearLayer's layout), y N×Out. The products run in cuBLAS (BF16 operands,
// float32 sums in cuBLAS's order), so results match the CPU within a
// tolerance (see the tests); the bias is added to the float32 sums before
// the one rounding, and the bias gradient is summed in the CPU's order.
type linearLayer struct{ N, In, Out int }

func (l linearLayer) bf16(p gpu.Ptr, ld int) gpu.Mat {
	return gpu.Mat{Ptr: p, Type: gpu.BF16, LD: ld}
}

// Forward computes y = bf16(x·Wᵀ + b). With a bias, y is first filled with
// it and the product runs with β = 1 into BF16: cuBLAS adds the float32 sums
// and the bias in float32 and rounds once, as the CPU does (the emulation
// computes α·sum + β·c the same way).
func (o *gptOps) LinearForward(l linearLayer, y, x, w, b gpu.Ptr) error {
	defer o.scope("linear")()
	beta := float32(0)
	if b != 0 {
		n := int64(l.N) * int64(l.Out)
		if err := o.elementwise8(n, l.Out, []gpu.Ptr{y, b},
			func(grid, block int) error { return gptkernel.BiasFill(o.dev, grid, block, y, b, int32(l.Out), n) },
			func(grid, block int) error { return gptkernel.BiasFillV8(o.dev, grid, block, y, b, int32(l.Out), n) },
		); err != nil {
			return err
		}
		beta = 1
	}
	return o.dev.Gemm(gpu.Gemm{TransA: true, M: l.Out, N: l.N, K: l.In, Alpha: 1, Beta: beta,
		A: l.bf16(w, l.In), B: l.bf16(x, l.In), C: l.bf16(y, l.Out)})
}

// LinearBackwardInput computes dx = bf16(dy·W) (N×In).
func (o *gptOps) LinearBackwardInput(l linearLayer, dx, dy, w gpu.Ptr) error {
	defer o.scope("linear")()
	return o.dev.Gemm(gpu.Gemm{M: l.In, N: l.N, K: l.Out, Alpha: 1,
		A: l.bf16(w, l.In), B: l.bf16(dy, l.Out), C: l.bf16(dx, l.In)})
}

// LinearBackwardWeight computes dW = bf16(dyᵀ·x) (Out×In) and, if db is not
// 0, db = bf16(Σ_n dy[n]) (ColSum: the CPU's bits when gptOps.SumRows ≥ N).
func (o *gptOps) LinearBackwardWeight(l linearLayer, dw, db, dy, x gpu.Ptr) error {
	defer o.scope("linear")()
	if err := o.dev.Gemm(gpu.Gemm{TransB: true, M: l.In, N: l.Out, K: l.N, Alpha: 1,
		A: l.bf16(x, l.In), B: l.bf16(dy, l.Out), C: l.bf16(dw, l.In)}); err != nil {
		return err
	}
	if db == 0 {
		return nil
	}
	return o.ColSum(db, dy, l.N, l.Out)
}
