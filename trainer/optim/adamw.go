package optim

import (
	"math"

	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// AdamW holds the hyperparameters of decoupled-weight-decay Adam.
type AdamW struct {
	Schedule
	Beta1, Beta2, Eps, WeightDecay float64
}

// AdamWStep is what one step's update receives: float32 scalars computed on
// the host in float64 (see Step).
type AdamWStep struct {
	LR, Beta1, OneMinusBeta1, Beta2, OneMinusBeta2, Eps, WeightDecay, BiasCorr1, BiasCorr2 float32
}

// Step returns the scalars for step t (from 1):
//
//	LR = float32(Schedule.At(t)), OneMinusBeta1 = float32(1 − β1) (in float64),
//	BiasCorr1 = float32(1 − β1^t), BiasCorr2 = float32(1 − β2^t) (math.Pow, float64)
//
// and the rest converted as they are. decay says whether this tensor decays
// (WeightDecay is 0 otherwise).
func (a AdamW) Step(t int, decay bool) AdamWStep {
	s := AdamWStep{
		LR:            float32(a.At(t)),
		Beta1:         float32(a.Beta1),
		OneMinusBeta1: float32(1 - a.Beta1),
		Beta2:         float32(a.Beta2),
		OneMinusBeta2: float32(1 - a.Beta2),
		Eps:           float32(a.Eps),
		BiasCorr1:     float32(1 - math.Pow(a.Beta1, float64(t))),
		BiasCorr2:     float32(1 - math.Pow(a.Beta2, float64(t))),
	}
	if decay {
		s.WeightDecay = float32(a.WeightDecay)
	}
	return s
}

// Update applies one AdamW step to w, m and v from gradient g (all BF16, the
// same length), element by element, in float32:
//
//	g  = f32(G)
//	m' = Beta1·f32(M) + OneMinusBeta1·g
//	v' = Beta2·f32(V) + OneMinusBeta2·(g·g)
//	u  = (m'/BiasCorr1) / (sqrt(v'/BiasCorr2) + Eps) + WeightDecay·f32(W)
//	W' = f32(W) − LR·u
//	M, V, W = bf16(m'), bf16(v'), bf16(W')
//
// each product, quotient, sum and root rounded to float32 separately (in
// vector lanes where package vec can, the same operations).
func (s AdamWStep) Update(w, m, v, g []uint16) {
	k := [9]float32{s.LR, s.Beta1, s.OneMinusBeta1, s.Beta2, s.OneMinusBeta2, s.Eps, s.WeightDecay, s.BiasCorr1, s.BiasCorr2}
	par.For(len(w), grain, func(lo, hi int) {
		lo += vec.AdamW(w[lo:hi], m[lo:hi], v[lo:hi], g[lo:hi], &k)
		for i := lo; i < hi; i++ {
			gi := bf16.ToFloat32(g[i])
			wi := bf16.ToFloat32(w[i])
			mi := float32(s.Beta1*bf16.ToFloat32(m[i])) + float32(s.OneMinusBeta1*gi)
			vi := float32(s.Beta2*bf16.ToFloat32(v[i])) + float32(s.OneMinusBeta2*float32(gi*gi))
			mh := float32(mi / s.BiasCorr1)
			vh := float32(vi / s.BiasCorr2)
			u := float32(mh/(sqrt32(vh)+s.Eps)) + float32(s.WeightDecay*wi)
			m[i] = bf16.FromFloat32(mi)
			v[i] = bf16.FromFloat32(vi)
			w[i] = bf16.FromFloat32(wi - float32(s.LR*u))
		}
	})
}
