package ops

import (
	"math"

	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// CrossEntropy is the softmax cross-entropy of N rows of V logits against
// integer targets; forward and backward run together since the gradient
// needs the same softmax.
type CrossEntropy struct{ N, V int }

// ForwardBackward computes per row, in float32 (sums ascending over v):
//
//	m = max logits, e_v = exp(l_v − m), S = Σ e_v
//	loss[n] = (m + log S) − l_target
//	dlogits[n][v] = bf16((e_v/S − [v = target])·gradScale)
//
// dlogits may be logits itself (each row is read before it is written).
func (ce CrossEntropy) ForwardBackward(dlogits []uint16, losses []float32, logits []uint16, targets []int32, gradScale float32) {
	par.For(ce.N, 8, func(lo, hi int) {
		l, e := make([]float32, ce.V), make([]float32, ce.V)
		for n := lo; n < hi; n++ {
			widenRow(l, logits[n*ce.V:(n+1)*ce.V])
			m := float32(math.Inf(-1))
			for _, x := range l {
				m = max(m, x)
			}
			tgt := int(targets[n])
			lt := l[tgt]
			vec.ExpShifted(e, l, m)
			var s float32
			for _, x := range e {
				s += x
			}
			losses[n] = m + float32(math.Log(float64(s))) - lt
			out := dlogits[n*ce.V : (n+1)*ce.V]
			for v := range out {
				p := e[v] / s
				if v == tgt {
					p--
				}
				out[v] = bf16.FromFloat32(float32(p * gradScale))
			}
		}
	})
}

// MeanLoss is Σ losses / len(losses), summed in ascending order in float64.
func MeanLoss(losses []float32) float32 {
	var s float64
	for _, l := range losses {
		s += float64(l)
	}
	return float32(s / float64(len(losses)))
}
