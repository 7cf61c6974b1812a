package ops

import (
	"math"

	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
)

// LayerNormEps is added to the variance before the square root.
const LayerNormEps = 1e-5

// LayerNorm normalises each of N rows of C values, then scales by g and
// shifts by b (both C long).
type LayerNorm struct{ N, C int }

// Forward computes, per row n, in float32 with sums in ascending c:
//
//	mean = Σx/C, var = Σ(x−mean)²/C, rstd = 1/sqrt(var+eps)
//	y = bf16((x−mean)·rstd·g + b)
//
// and keeps mean and rstd (float32, N each) for the backward pass.
func (l LayerNorm) Forward(y []uint16, mean, rstd []float32, x, g, b []uint16) {
	par.For(l.N, 8, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			row := x[n*l.C : (n+1)*l.C]
			var s float32
			for _, v := range row {
				s += bf16.ToFloat32(v)
			}
			m := s / float32(l.C)
			var ss float32
			for _, v := range row {
				d := bf16.ToFloat32(v) - m
				ss += float32(d * d)
			}
			rs := float32(1 / math.Sqrt(float64(ss/float32(l.C)+LayerNormEps)))
			mean[n], rstd[n] = m, rs
			out := y[n*l.C : (n+1)*l.C]
			for c, v := range row {
				norm := float32((bf16.ToFloat32(v) - m) * rs)
				out[c] = bf16.FromFloat32(float32(norm*bf16.ToFloat32(g[c])) + bf16.ToFloat32(b[c]))
			}
		}
	})
}

// Backward computes dx (N×C), dg and db (C each) from dy, with norm =
// (x−mean)·rstd and dnorm = dy·g:
//
//	dx = bf16(rstd·(dnorm − Σdnorm/C − norm·Σ(dnorm·norm)/C))   per row, sums in ascending c
//	dg[c] = bf16(Σ_n dy·norm), db[c] = bf16(Σ_n dy)              sums in ascending n
func (l LayerNorm) Backward(dx, dg, db []uint16, dy, x, g []uint16, mean, rstd []float32) {
	par.For(l.N, 8, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			xr, dyr := x[n*l.C:(n+1)*l.C], dy[n*l.C:(n+1)*l.C]
			m, rs := mean[n], rstd[n]
			var sd, sdn float32
			for c := range l.C {
				norm := float32((bf16.ToFloat32(xr[c]) - m) * rs)
				dnorm := float32(bf16.ToFloat32(dyr[c]) * bf16.ToFloat32(g[c]))
				sd += dnorm
				sdn += float32(dnorm * norm)
			}
			sd /= float32(l.C)
			sdn /= float32(l.C)
			out := dx[n*l.C : (n+1)*l.C]
			for c := range l.C {
				norm := float32((bf16.ToFloat32(xr[c]) - m) * rs)
				dnorm := float32(bf16.ToFloat32(dyr[c]) * bf16.ToFloat32(g[c]))
				out[c] = bf16.FromFloat32(float32(rs * (dnorm - sd - float32(norm*sdn))))
			}
		}
	})
	par.For(l.C, 8, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			var sg, sb float32
			for n := range l.N {
				d := bf16.ToFloat32(dy[n*l.C+c])
				norm := float32((bf16.ToFloat32(x[n*l.C+c]) - mean[n]) * rstd[n])
				sg += float32(d * norm)
				sb += d
			}
			dg[c], db[c] = bf16.FromFloat32(sg), bf16.FromFloat32(sb)
		}
	})
}
