package ops

import (
	"math"

	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
)

// Attention is causal multi-head self-attention over B sequences of T
// positions. Its input qkv is B×T×3C (q, k, v side by side, head h in
// columns h·D..(h+1)·D of each, D = C/H); its output y is B×T×C.
//
// The probabilities are not stored: the backward pass recomputes them with
// the same code, bit for bit, which costs O(T²·D) per head against the
// O(T²·H) bytes they would take.
type Attention struct{ B, T, C, H int }

func (a Attention) headDim() int { return a.C / a.H }

// scale is 1/sqrt(D) rounded to float32.
func (a Attention) scale() float32 { return float32(1 / math.Sqrt(float64(a.headDim()))) }

// head widens head h of sequence b: q, k and v, each T×D float32.
func (a Attention) head(qkv []uint16, b, h int, q, k, v []float32) {
	D := a.headDim()
	for t := range a.T {
		row := qkv[(b*a.T+t)*3*a.C:]
		widenRow(q[t*D:(t+1)*D], row[h*D:])
		widenRow(k[t*D:(t+1)*D], row[a.C+h*D:])
		widenRow(v[t*D:(t+1)*D], row[2*a.C+h*D:])
	}
}

// probs fills p[0..t] with the softmax over u ≤ t of s[u] = (q_t·k_u)·scale:
// dots in ascending d, max, e[u] = exp(s[u]−max) rounded to float32, their
// sum in ascending u, p[u] = e[u]·(1/sum).
func (a Attention) probs(p, q, k []float32, t int, scale float32) {
	D := a.headDim()
	qt := q[t*D : (t+1)*D]
	m := float32(math.Inf(-1))
	for u := 0; u <= t; u++ {
		s := float32(dot(qt, k[u*D:(u+1)*D]) * scale)
		p[u] = s
		m = max(m, s)
	}
	var sum float32
	for u := 0; u <= t; u++ {
		e := float32(math.Exp(float64(p[u] - m)))
		p[u] = e
		sum += e
	}
	inv := 1 / sum
	for u := 0; u <= t; u++ {
		p[u] = float32(p[u] * inv)
	}
}

// Forward computes y_t = Σ_{u≤t} p_t[u]·v_u (ascending u) for every head.
func (a Attention) Forward(y, qkv []uint16) {
	D, scale := a.headDim(), a.scale()
	par.For(a.B*a.H, 1, func(lo, hi int) {
		q, k, v := make([]float32, a.T*D), make([]float32, a.T*D), make([]float32, a.T*D)
		p, acc := make([]float32, a.T), make([]float32, D)
		for bh := lo; bh < hi; bh++ {
			b, h := bh/a.H, bh%a.H
			a.head(qkv, b, h, q, k, v)
			for t := range a.T {
				a.probs(p, q, k, t, scale)
				clear(acc)
				for u := 0; u <= t; u++ {
					axpy(acc, p[u], v[u*D:(u+1)*D])
				}
				out := y[(b*a.T+t)*a.C+h*D:]
				for d := range D {
					out[d] = bf16.FromFloat32(acc[d])
				}
			}
		}
	})
}

// Backward computes dqkv from dy. With p recomputed, for each t ascending:
//
//	dp[u] = dy_t·v_u; dv_u += p[u]·dy_t
//	ds[u] = p[u]·(dp[u] − Σ_u p[u]·dp[u])
//	dq_t = (Σ_u ds[u]·k_u)·scale; dk_u += ds[u]·q_t   (dk scaled at the end)
//
// every sum in ascending order, in float32, rounded to BF16 once at the end.
func (a Attention) Backward(dqkv, dy, qkv []uint16) {
	D, scale := a.headDim(), a.scale()
	par.For(a.B*a.H, 1, func(lo, hi int) {
		q, k, v := make([]float32, a.T*D), make([]float32, a.T*D), make([]float32, a.T*D)
		dk, dv := make([]float32, a.T*D), make([]float32, a.T*D)
		p, dp, dyt, dq := make([]float32, a.T), make([]float32, a.T), make([]float32, D), make([]float32, D)
		for bh := lo; bh < hi; bh++ {
			b, h := bh/a.H, bh%a.H
			a.head(qkv, b, h, q, k, v)
			clear(dk)
			clear(dv)
			for t := range a.T {
				a.probs(p, q, k, t, scale)
				widenRow(dyt, dy[(b*a.T+t)*a.C+h*D:])
				var sum float32
				for u := 0; u <= t; u++ {
					dp[u] = dot(dyt, v[u*D:(u+1)*D])
					axpy(dv[u*D:(u+1)*D], p[u], dyt)
					sum += float32(p[u] * dp[u])
				}
				clear(dq)
				qt := q[t*D : (t+1)*D]
				for u := 0; u <= t; u++ {
					ds := float32(p[u] * (dp[u] - sum))
					axpy(dq, ds, k[u*D:(u+1)*D])
					axpy(dk[u*D:(u+1)*D], ds, qt)
				}
				out := dqkv[(b*a.T+t)*3*a.C+h*D:]
				for d := range D {
					out[d] = bf16.FromFloat32(float32(dq[d] * scale))
				}
			}
			for t := range a.T {
				row := dqkv[(b*a.T+t)*3*a.C:]
				for d := range D {
					row[a.C+h*D+d] = bf16.FromFloat32(float32(dk[t*D+d] * scale))
					row[2*a.C+h*D+d] = bf16.FromFloat32(dv[t*D+d])
				}
			}
		}
	})
}

// axpy adds s·x to acc element by element (products rounded, never fused).
func axpy(acc []float32, s float32, x []float32) {
	x = x[:len(acc)]
	for i, v := range x {
		acc[i] += float32(s * v)
	}
}
