package cudabackend

import (
	"lcttop/trainer"
	"lcttop/trainer/cudabackend/device"
)

// scratchCat is the category of the kernels' temporary buffers.
const scratchCat = trainer.Activations

// linearScratch bounds the float32 accumulator of a biased Linear forward:
// the rows are done in chunks that fit it.
const linearScratch = 32 << 20

// Linear is ops.Linear on the device: y = x·Wᵀ + b with x N×In, W Out×In
// (nn.Linear's layout), y N×Out. The products run in cuBLAS (BF16 operands,
// float32 sums in cuBLAS's order), so results match the CPU within a
// tolerance (see the tests); everything after the products (the bias, the
// bias gradient) is summed in the CPU's order.
type Linear struct{ N, In, Out int }

func (l Linear) bf16(p device.Ptr, ld int) device.Mat {
	return device.Mat{Ptr: p, Type: device.BF16, LD: ld}
}

// Forward computes y = bf16(x·Wᵀ + b): with a bias, the float32 sums are
// kept, the bias added to them and the result rounded once, as on the CPU.
func (o *Ops) LinearForward(l Linear, y, x, w, b device.Ptr) error {
	defer o.scope("linear")()
	if b == 0 {
		return o.dev.Gemm(device.Gemm{TransA: true, M: l.Out, N: l.N, K: l.In, Alpha: 1,
			A: l.bf16(w, l.In), B: l.bf16(x, l.In), C: l.bf16(y, l.Out)})
	}
	rows := max(1, min(l.N, linearScratch/(4*l.Out)))
	acc, err := o.mem.Alloc(scratchCat, 4*int64(rows)*int64(l.Out))
	if err != nil {
		return err
	}
	defer o.mem.Free(acc)
	for r0 := 0; r0 < l.N; r0 += rows {
		nr := min(rows, l.N-r0)
		if err := o.dev.Gemm(device.Gemm{TransA: true, M: l.Out, N: nr, K: l.In, Alpha: 1,
			A: l.bf16(w, l.In), B: l.bf16(x.Add(2*int64(r0)*int64(l.In)), l.In),
			C: device.Mat{Ptr: acc, Type: device.F32, LD: l.Out}}); err != nil {
			return err
		}
		n := int64(nr) * int64(l.Out)
		if err := o.elementwise8("gpt_bias_round", n, l.Out, y.Add(2*int64(r0)*int64(l.Out)), acc, b, int32(l.Out), n); err != nil {
			return err
		}
	}
	return nil
}

// LinearBackwardInput computes dx = bf16(dy·W) (N×In).
func (o *Ops) LinearBackwardInput(l Linear, dx, dy, w device.Ptr) error {
	defer o.scope("linear")()
	return o.dev.Gemm(device.Gemm{M: l.In, N: l.N, K: l.Out, Alpha: 1,
		A: l.bf16(w, l.In), B: l.bf16(dy, l.Out), C: l.bf16(dx, l.In)})
}

// LinearBackwardWeight computes dW = bf16(dyᵀ·x) (Out×In) and, if db is not
// 0, db = bf16(Σ_n dy[n]) (ColSum: the CPU's bits when Ops.SumRows ≥ N).
func (o *Ops) LinearBackwardWeight(l Linear, dw, db, dy, x device.Ptr) error {
	defer o.scope("linear")()
	if err := o.dev.Gemm(device.Gemm{TransB: true, M: l.In, N: l.Out, K: l.N, Alpha: 1,
		A: l.bf16(x, l.In), B: l.bf16(dy, l.Out), C: l.bf16(dw, l.In)}); err != nil {
		return err
	}
	if db == 0 {
		return nil
	}
	return o.ColSum(db, dy, l.N, l.Out)
}
