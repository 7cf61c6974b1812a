package optim

import (
	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// SGD is stochastic gradient descent with (heavy-ball) momentum.
type SGD struct {
	Schedule
	Momentum, WeightDecay float64
}

// SGDStep is what one step's update receives, computed on the host.
type SGDStep struct{ LR, Momentum, WeightDecay float32 }

// Step returns the scalars for step t (from 1); decay says whether this
// tensor decays.
func (o SGD) Step(t int, decay bool) SGDStep {
	s := SGDStep{LR: float32(o.At(t)), Momentum: float32(o.Momentum)}
	if decay {
		s.WeightDecay = float32(o.WeightDecay)
	}
	return s
}

// Update applies one step to w and its momentum buffer m from gradient g,
// element by element, in float32:
//
//	d  = f32(G) + WeightDecay·f32(W)
//	m' = Momentum·f32(M) + d
//	W' = f32(W) − LR·m'
//	M, W = bf16(m'), bf16(W')
//
// each product and sum rounded to float32 separately.
func (s SGDStep) Update(w, m, g []uint16) {
	k := [3]float32{s.LR, s.Momentum, s.WeightDecay}
	par.For(len(w), grain, func(lo, hi int) {
		lo += vec.SGD(w[lo:hi], m[lo:hi], g[lo:hi], &k)
		for i := lo; i < hi; i++ {
			wi := bf16.ToFloat32(w[i])
			d := bf16.ToFloat32(g[i]) + float32(s.WeightDecay*wi)
			mi := float32(s.Momentum*bf16.ToFloat32(m[i])) + d
			m[i] = bf16.FromFloat32(mi)
			w[i] = bf16.FromFloat32(wi - float32(s.LR*mi))
		}
	})
}
