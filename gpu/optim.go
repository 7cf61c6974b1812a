package gpu

import "math"

// The optimizer updates are the trainer's (trainer/optim), fixed operation by
// operation so that the CPU and the GPU give the same bits: float32
// arithmetic, every product, quotient, sum and root rounded to float32 on its
// own (the kernels use __fmul_rn, __fadd_rn, __fsub_rn, __fdiv_rn and
// __fsqrt_rn, which never contract into FMAs; Go code writes float32(a*b) to
// the same end), in the order written below, and each stored value rounded
// once to BF16, to nearest, ties to even, a NaN kept quiet with its sign and
// top payload bits. NaN results are NaN on both sides, but their payload bits
// may differ (the GPU's arithmetic returns a canonical NaN).

// SGDStep holds one step's scalars of SGD with heavy-ball momentum, computed
// on the host (the same fields as trainer/optim.SGDStep, so one converts to
// the other). Per element, with W, M and G widened from BF16:
//
//	d  = G + WeightDecay·W
//	m' = Momentum·M + d
//	W' = W − LR·m'
//	M, W = bf16(m'), bf16(W')
type SGDStep struct{ LR, Momentum, WeightDecay float32 }

// AdamWStep holds one step's scalars of AdamW (the same fields as
// trainer/optim.AdamWStep). Per element:
//
//	m' = Beta1·M + OneMinusBeta1·G
//	v' = Beta2·V + OneMinusBeta2·(G·G)
//	u  = (m'/BiasCorr1) / (sqrt(v'/BiasCorr2) + Eps) + WeightDecay·W
//	W' = W − LR·u
//	M, V, W = bf16(m'), bf16(v'), bf16(W')
type AdamWStep struct {
	LR, Beta1, OneMinusBeta1, Beta2, OneMinusBeta2, Eps, WeightDecay, BiasCorr1, BiasCorr2 float32
}

// kernel arguments, in the kernels' order.
func (s SGDStep) args() []uint64 {
	return []uint64{f32arg(s.LR), f32arg(s.Momentum), f32arg(s.WeightDecay)}
}

func (s AdamWStep) args() []uint64 {
	return []uint64{f32arg(s.LR), f32arg(s.Beta1), f32arg(s.OneMinusBeta1), f32arg(s.Beta2), f32arg(s.OneMinusBeta2),
		f32arg(s.Eps), f32arg(s.WeightDecay), f32arg(s.BiasCorr1), f32arg(s.BiasCorr2)}
}

func f32arg(f float32) uint64 { return uint64(math.Float32bits(f)) }
