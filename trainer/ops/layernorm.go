package ops

import (
	"math"

	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// LayerNormEps is added to the variance before the square root.
const LayerNormEps = 1e-5

// LayerNorm normalises each of N rows of C values, then scales by g and
// shifts by b (both C long).
type LayerNorm struct{ N, C int }

// Forward computes, per row n, in float32 with sums in lane order
// (rowSum):
//
//	mean = Σx/C, var = Σ(x−mean)²/C, rstd = 1/sqrt(var+eps)
//	y = bf16((x−mean)·rstd·g + b)
//
// and keeps mean and rstd (float32, N each) for the backward pass.
func (l LayerNorm) Forward(y []uint16, mean, rstd []float32, x, g, b []uint16) {
	gf, bf := widened(g[:l.C]), widened(b[:l.C])
	par.For(l.N, 8, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			row := x[n*l.C : (n+1)*l.C]
			var s, ss rowSum
			for c, v := range row {
				s.add(c, bf16.ToFloat32(v))
			}
			m := s.total() / float32(l.C)
			for c, v := range row {
				d := bf16.ToFloat32(v) - m
				ss.add(c, float32(d*d))
			}
			rs := float32(1 / math.Sqrt(float64(ss.total()/float32(l.C)+LayerNormEps)))
			mean[n], rstd[n] = m, rs
			vec.NormRow(y[n*l.C:(n+1)*l.C], row, gf, bf, m, rs)
		}
	})
}

// Backward computes dx (N×C), dg and db (C each) from dy, with norm =
// (x−mean)·rstd and dnorm = dy·g:
//
//	dx = bf16(rstd·(dnorm − Σdnorm/C − norm·Σ(dnorm·norm)/C))   per row, sums in lane order
//	dg[c] = bf16(Σ_n dy·norm), db[c] = bf16(Σ_n dy)              sums in ascending n
func (l LayerNorm) Backward(dx, dg, db []uint16, dy, x, g []uint16, mean, rstd []float32) {
	gf := widened(g[:l.C])
	par.For(l.N, 8, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			xr, dyr := x[n*l.C:(n+1)*l.C], dy[n*l.C:(n+1)*l.C]
			m, rs := mean[n], rstd[n]
			var rsd, rsdn rowSum
			for c, v := range xr {
				norm := float32((bf16.ToFloat32(v) - m) * rs)
				dnorm := float32(bf16.ToFloat32(dyr[c]) * gf[c])
				rsd.add(c, dnorm)
				rsdn.add(c, float32(dnorm*norm))
			}
			sd := rsd.total() / float32(l.C)
			sdn := rsdn.total() / float32(l.C)
			vec.NormGradRow(dx[n*l.C:(n+1)*l.C], xr, dyr, gf, m, rs, sd, sdn)
		}
	})
	// The parameter gradients, a range of columns per goroutine, the rows
	// added in order.
	par.For(l.C, 64, func(lo, hi int) {
		sg, sb := make([]float32, hi-lo), make([]float32, hi-lo)
		for n := range l.N {
			vec.NormParamGrad(sg, sb, x[n*l.C+lo:n*l.C+hi], dy[n*l.C+lo:n*l.C+hi], mean[n], rstd[n])
		}
		bf16.FromFloat32s(dg[lo:hi], sg)
		bf16.FromFloat32s(db[lo:hi], sb)
	})
}

// widened is v in float32.
func widened(v []uint16) []float32 {
	out := make([]float32, len(v))
	vec.Widen(out, v)
	return out
}
