package cudabackend

import (
	"fmt"

	"lcttop/gpu"
	"lcttop/gpu/gptkernel"
	"lcttop/kernels"
	"lcttop/session"
	"lcttop/trainer/ops"
	"lcttop/trainer/optim"
)

// gptOps launches the GPT kernels (kernels/gpt) on device buffers. Tensors are
// row-major BF16 as in trainer/ops, and each method computes what the CPU op
// of the same name computes; its comment says whether bit for bit or within
// a tolerance. Temporary buffers come from mem (category Activations).
type gptOps struct {
	dev Device
	mem *Mem
	// SumRows is how many rows each partial sum of a column reduction
	// covers (the LayerNorm gain and bias gradients, a bias gradient): 0
	// takes defaultSumRows; at least N sums each column in one pass, in
	// ascending rows, the CPU's order bit for bit.
	SumRows int
	// beforeAlloc, when set, runs before each scratch allocation (the
	// run's relief of its store: see lctStore.relieve).
	beforeAlloc func(bytes int64) error
	// gelu holds ops.GELUTables on the device once a GELU has run: the
	// forward table at its start, the gradient's after it.
	gelu gpu.Ptr
}

const geluTableBytes = 2<<16 + 4<<16

// geluTables returns the device's copy of ops.GELUTables, uploaded at the
// first use and kept, as the weights are (and counted with them: constants
// of the model's function, held alike by both runs).
func (o *gptOps) geluTables() (fwd, slope gpu.Ptr, err error) {
	if o.gelu == 0 {
		p, err := o.mem.Alloc(session.Weights, geluTableBytes)
		if err != nil {
			return 0, 0, err
		}
		f, s := ops.GELUTables()
		if err := o.dev.Upload(p, gpu.Bytes(f)); err != nil {
			o.mem.Free(p)
			return 0, 0, err
		}
		if err := o.dev.Upload(p.Add(2<<16), gpu.F32Bytes(s)); err != nil {
			o.mem.Free(p)
			return 0, 0, err
		}
		o.gelu = p
	}
	return o.gelu, o.gelu.Add(2 << 16), nil
}

// alloc is scratch memory for one op.
func (o *gptOps) alloc(c session.Category, bytes int64) (gpu.Ptr, error) {
	if o.beforeAlloc != nil {
		if err := o.beforeAlloc(bytes); err != nil {
			return 0, err
		}
	}
	return o.mem.Alloc(c, bytes)
}

// defaultSumRows keeps a column reduction's first pass short and wide: for
// the 162M model's 8192 rows, 64 partials per column.
const defaultSumRows = 128

// newGPTOps returns the kernels of a run whose scratch memory is mem.
func newGPTOps(mem *Mem) *gptOps { return &gptOps{dev: mem.Dev(), mem: mem} }

const (
	elemThreads = 256
	maxGrid     = 1 << 16
)

// gridFor is the grid of a grid-stride kernel over n items.
func gridFor(n int64, block int) int {
	return int(max(1, min((n+int64(block)-1)/int64(block), maxGrid)))
}

// scope names the op of the launches that follow for a profiling device
// (LCTTOP_PROFILE_OPS); call the result when they are queued.
func (o *gptOps) scope(name string) func() { return o.dev.Scope(name) }

// launchFunc queues one kernel, with its arguments bound, on grid and block.
type launchFunc func(grid, block int) error

// elementwise launches a grid-stride kernel over n items (none when n is 0).
func (o *gptOps) elementwise(n int64, launch launchFunc) error {
	if n == 0 {
		return nil
	}
	return launch(gridFor(n, elemThreads), elemThreads)
}

// scalarOnly turns off the vector forms of the element-wise kernels (for
// tests: both forms give the same bits).
var scalarOnly = false

// elementwise8 launches a kernel's vector form (its _v8 twin: 8 elements a
// thread through 16-byte accesses) when every device pointer of ptrs, the
// kernel's, is 16-byte aligned and rowLen (the row length of a row-wise
// kernel; 8 for one without rows) is a multiple of 8, else the scalar
// form. Both compute every element with the same formula.
func (o *gptOps) elementwise8(n int64, rowLen int, ptrs []gpu.Ptr, scalar, vector launchFunc) error {
	if n == 0 {
		return nil
	}
	vec := !scalarOnly && rowLen%8 == 0
	for _, p := range ptrs {
		if p%16 != 0 {
			vec = false
		}
	}
	if !vec {
		return o.elementwise(n, scalar)
	}
	return vector(gridFor((n+7)/8, elemThreads), elemThreads)
}

// Add computes dst = bf16(a + b) over n elements; dst may be a or b. Bit for
// bit ops.Add.
func (o *gptOps) Add(dst, a, b gpu.Ptr, n int) error {
	defer o.scope("add")()
	N := int64(n)
	return o.elementwise8(N, 8, []gpu.Ptr{dst, a, b},
		func(grid, block int) error { return gptkernel.Add(o.dev, grid, block, dst, a, b, N) },
		func(grid, block int) error { return gptkernel.AddV8(o.dev, grid, block, dst, a, b, N) })
}

// GELUForward is ops.GELUForward, bit for bit; y may be x.
func (o *gptOps) GELUForward(y, x gpu.Ptr, n int) error {
	defer o.scope("gelu")()
	fwd, _, err := o.geluTables()
	if err != nil {
		return err
	}
	N := int64(n)
	return o.elementwise8(N, 8, []gpu.Ptr{y, x, fwd},
		func(grid, block int) error { return gptkernel.GELUForward(o.dev, grid, block, y, x, fwd, N) },
		func(grid, block int) error { return gptkernel.GELUForwardV8(o.dev, grid, block, y, x, fwd, N) })
}

// GELUBackward is ops.GELUBackward, bit for bit; dx may be dy.
func (o *gptOps) GELUBackward(dx, dy, x gpu.Ptr, n int) error {
	defer o.scope("gelu")()
	_, slope, err := o.geluTables()
	if err != nil {
		return err
	}
	N := int64(n)
	return o.elementwise8(N, 8, []gpu.Ptr{dx, dy, x, slope},
		func(grid, block int) error { return gptkernel.GELUBackward(o.dev, grid, block, dx, dy, x, slope, N) },
		func(grid, block int) error { return gptkernel.GELUBackwardV8(o.dev, grid, block, dx, dy, x, slope, N) })
}

// GELUBackwardForward is GELUBackward(dy, dy, x, n) followed by
// GELUForward(x, x, n), bit for bit, in one pass that reads x once:
// the backward's gradient of the fc output and the GELU output it recomputes
// for the fc-projection weight gradient.
func (o *gptOps) GELUBackwardForward(dy, x gpu.Ptr, n int) error {
	defer o.scope("gelu")()
	fwd, slope, err := o.geluTables()
	if err != nil {
		return err
	}
	N := int64(n)
	return o.elementwise8(N, 8, []gpu.Ptr{dy, x, fwd, slope},
		func(grid, block int) error {
			return gptkernel.GELUBackwardForward(o.dev, grid, block, dy, x, fwd, slope, N)
		},
		func(grid, block int) error {
			return gptkernel.GELUBackwardForwardV8(o.dev, grid, block, dy, x, fwd, slope, N)
		})
}

// EmbeddingForward is ops.Embedding.Forward, bit for bit: x (B·T×C) from the
// tokens (device int32, B·T) and the tables wte (V×C), wpe (≥T×C).
func (o *gptOps) EmbeddingForward(x, tokens, wte, wpe gpu.Ptr, B, T, C int) error {
	defer o.scope("embedding")()
	n := int64(B) * int64(T) * int64(C)
	return o.elementwise(n, func(grid, block int) error {
		return gptkernel.EmbeddingForward(o.dev, grid, block, x, tokens, wte, wpe, int32(T), int32(C), n)
	})
}

// embeddingOrder is what EmbeddingBackward needs of the tokens: for each
// vocabulary entry v, the positions holding it in ascending order,
// order[start[v]..start[v+1]). It is built on the host, as ops.Embedding
// builds it, and uploaded.
func embeddingOrder(tokens []int32, V int) (order, start []int32, err error) {
	start = make([]int32, V+1)
	for n, tok := range tokens {
		if tok < 0 || int(tok) >= V {
			return nil, nil, fmt.Errorf("token %d at position %d outside the vocabulary 0..%d", tok, n, V-1)
		}
		start[tok+1]++
	}
	for v := range V {
		start[v+1] += start[v]
	}
	order = make([]int32, len(tokens))
	fill := append([]int32(nil), start[:V]...)
	for n, tok := range tokens {
		order[fill[tok]] = int32(n)
		fill[tok]++
	}
	return order, start, nil
}

// EmbeddingBackward is ops.Embedding.Backward, bit for bit: dwte (V×C) from
// dx (B·T×C) through order/start (device int32, from embeddingOrder), and
// dwpe (rows×C; rows T.. are zero).
func (o *gptOps) EmbeddingBackward(dwte, dwpe, dx, order, start gpu.Ptr, B, T, C, V, rows int) error {
	defer o.scope("embedding")()
	n := int64(V) * int64(C)
	if err := o.elementwise(n, func(grid, block int) error {
		return gptkernel.EmbeddingBackwardWTE(o.dev, grid, block, dwte, dx, order, start, int32(C), n)
	}); err != nil {
		return err
	}
	n = int64(rows) * int64(C)
	return o.elementwise(n, func(grid, block int) error {
		return gptkernel.EmbeddingBackwardWPE(o.dev, grid, block, dwpe, dx, int32(B), int32(T), int32(C), n)
	})
}

// LayerNormForward is ops.LayerNorm.Forward, bit for bit: y (N×C) and the
// float32 statistics mean and rstd (N each) from x, g, b.
func (o *gptOps) LayerNormForward(y, mean, rstd, x, g, b gpu.Ptr, N, C int) error {
	defer o.scope("layernorm")()
	blocks := (N + kernels.LayerNormRows - 1) / kernels.LayerNormRows
	return gptkernel.LayerNormForward(o.dev, blocks, kernels.LayerNormThreads, y, mean, rstd, x, g, b, int32(N), int32(C))
}

// LayerNormBackward is ops.LayerNorm.Backward: dx (N×C) bit for bit, dg and
// db (C each) bit for bit when SumRows ≥ N (else within float32 rounding of
// another summation order), from dy, x, g and the forward's statistics.
func (o *gptOps) LayerNormBackward(dx, dg, db, dy, x, g, mean, rstd gpu.Ptr, N, C int) error {
	defer o.scope("layernorm")()
	blocks := (N + kernels.LayerNormRows - 1) / kernels.LayerNormRows
	if err := gptkernel.LayerNormBackward(o.dev, blocks, kernels.LayerNormThreads, dx, dy, x, g, mean, rstd, int32(N), int32(C)); err != nil {
		return err
	}
	rows, chunks := o.sumChunks(N)
	partial, err := o.alloc(scratchCat, 8*int64(chunks)*int64(C))
	if err != nil {
		return err
	}
	defer o.mem.Free(partial)
	pg, pb := partial, partial.Add(4*int64(chunks)*int64(C))
	total := int64(chunks) * int64(C)
	if err := o.elementwise(total, func(grid, block int) error {
		return gptkernel.LayerNormParamsPartial(o.dev, grid, block, pg, pb, dy, x, mean, rstd, int32(N), int32(C), int32(rows), total)
	}); err != nil {
		return err
	}
	if err := gptkernel.ColSumFinish(o.dev, gridFor(int64(C), 128), 128, dg, pg, int32(chunks), int32(C)); err != nil {
		return err
	}
	return gptkernel.ColSumFinish(o.dev, gridFor(int64(C), 128), 128, db, pb, int32(chunks), int32(C))
}

// sumChunks is the rows per partial of a column reduction over N rows and
// the number of partials.
func (o *gptOps) sumChunks(N int) (rows, chunks int) {
	rows = o.SumRows
	if rows <= 0 {
		rows = defaultSumRows
	}
	rows = min(rows, max(N, 1))
	return rows, (N + rows - 1) / rows
}

// ColSum computes out[c] = bf16(Σ_n in[n][c]) (in is N×C): the bias
// gradient of ops.Linear.BackwardWeight; bit for bit when SumRows ≥ N.
func (o *gptOps) ColSum(out, in gpu.Ptr, N, C int) error {
	defer o.scope("bias")()
	rows, chunks := o.sumChunks(N)
	partial, err := o.alloc(scratchCat, 4*int64(chunks)*int64(C))
	if err != nil {
		return err
	}
	defer o.mem.Free(partial)
	total := int64(chunks) * int64(C)
	if err := o.elementwise(total, func(grid, block int) error {
		return gptkernel.ColSumPartial(o.dev, grid, block, partial, in, int32(N), int32(C), int32(rows), total)
	}); err != nil {
		return err
	}
	return gptkernel.ColSumFinish(o.dev, gridFor(int64(C), 128), 128, out, partial, int32(chunks), int32(C))
}

// CrossEntropy is ops.CrossEntropy.ForwardBackward, bit for bit: per-row
// float32 losses (N) and dlogits (N×V, may be logits) from the logits and
// the targets (device int32, N).
func (o *gptOps) CrossEntropy(dlogits, losses, logits, targets gpu.Ptr, N, V int, gradScale float32) error {
	defer o.scope("crossentropy")()
	return gptkernel.CrossEntropy(o.dev, gridFor(int64(N), 64), 64, dlogits, losses, logits, targets, int32(N), int32(V), gradScale)
}

// AdamW applies s to n elements of w, m, v from gradient g: optim's
// AdamWStep.Update, bit for bit.
func (o *gptOps) AdamW(w, m, v, g gpu.Ptr, n int, s optim.AdamWStep) error {
	defer o.scope("adamw")()
	N := int64(n)
	return o.elementwise8(N, 8, []gpu.Ptr{w, m, v, g},
		func(grid, block int) error {
			return gptkernel.AdamW(o.dev, grid, block, w, m, v, g, N, s.LR, s.Beta1, s.OneMinusBeta1, s.Beta2,
				s.OneMinusBeta2, s.Eps, s.WeightDecay, s.BiasCorr1, s.BiasCorr2)
		},
		func(grid, block int) error {
			return gptkernel.AdamWV8(o.dev, grid, block, w, m, v, g, N, s.LR, s.Beta1, s.OneMinusBeta1, s.Beta2,
				s.OneMinusBeta2, s.Eps, s.WeightDecay, s.BiasCorr1, s.BiasCorr2)
		})
}

// SGD applies s to n elements of w and m from gradient g: optim's
// SGDStep.Update, bit for bit.
func (o *gptOps) SGD(w, m, g gpu.Ptr, n int, s optim.SGDStep) error {
	defer o.scope("sgd")()
	N := int64(n)
	return o.elementwise(N, func(grid, block int) error {
		return gptkernel.SGD(o.dev, grid, block, w, m, g, N, s.LR, s.Momentum, s.WeightDecay)
	})
}
