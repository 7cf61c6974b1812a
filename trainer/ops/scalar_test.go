package ops

import (
	"math"

	"lcttop/trainer/bf16"
)

// The scalar versions of the ops: the documented arithmetic written out one
// output at a time, as the package first computed it. The fast ops must give
// the same bits (NaN-ness where two NaNs meet: see sameBF16).

func scalarLinearForward(l Linear, y, x, w, b []uint16) {
	f := bf16.ToFloat32
	for i := range l.N {
		for o := range l.Out {
			var s float32
			for k := range l.In {
				s += float32(f(x[i*l.In+k]) * f(w[o*l.In+k]))
			}
			if b != nil {
				s += f(b[o])
			}
			y[i*l.Out+o] = bf16.FromFloat32(s)
		}
	}
}

func scalarLinearBackward(l Linear, dx, dw, db, dy, x, w []uint16) {
	f := bf16.ToFloat32
	for i := range l.N {
		for k := range l.In {
			var s float32
			for o := range l.Out {
				s += float32(f(dy[i*l.Out+o]) * f(w[o*l.In+k]))
			}
			dx[i*l.In+k] = bf16.FromFloat32(s)
		}
	}
	for o := range l.Out {
		var sb float32
		for i := range l.N {
			sb += f(dy[i*l.Out+o])
		}
		db[o] = bf16.FromFloat32(sb)
		for k := range l.In {
			var s float32
			for i := range l.N {
				s += float32(f(dy[i*l.Out+o]) * f(x[i*l.In+k]))
			}
			dw[o*l.In+k] = bf16.FromFloat32(s)
		}
	}
}

func scalarDot(a, b []float32) float32 {
	var s float32
	for k, x := range a {
		s += float32(x * b[k])
	}
	return s
}

func scalarAxpy(acc []float32, s float32, x []float32) {
	for i, v := range x {
		acc[i] += float32(s * v)
	}
}

func scalarHead(a Attention, qkv []uint16, b, h int, q, k, v []float32) {
	D := a.headDim()
	for t := range a.T {
		row := qkv[(b*a.T+t)*3*a.C:]
		for d := range D {
			q[t*D+d] = bf16.ToFloat32(row[h*D+d])
			k[t*D+d] = bf16.ToFloat32(row[a.C+h*D+d])
			v[t*D+d] = bf16.ToFloat32(row[2*a.C+h*D+d])
		}
	}
}

func scalarProbs(a Attention, p, q, k []float32, t int, scale float32) {
	D := a.headDim()
	qt := q[t*D : (t+1)*D]
	m := float32(math.Inf(-1))
	for u := 0; u <= t; u++ {
		s := float32(scalarDot(qt, k[u*D:(u+1)*D]) * scale)
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

func scalarAttentionForward(a Attention, y, qkv []uint16) {
	D, scale := a.headDim(), a.scale()
	q, k, v := make([]float32, a.T*D), make([]float32, a.T*D), make([]float32, a.T*D)
	p, acc := make([]float32, a.T), make([]float32, D)
	for bh := range a.B * a.H {
		b, h := bh/a.H, bh%a.H
		scalarHead(a, qkv, b, h, q, k, v)
		for t := range a.T {
			scalarProbs(a, p, q, k, t, scale)
			clear(acc)
			for u := 0; u <= t; u++ {
				scalarAxpy(acc, p[u], v[u*D:(u+1)*D])
			}
			out := y[(b*a.T+t)*a.C+h*D:]
			for d := range D {
				out[d] = bf16.FromFloat32(acc[d])
			}
		}
	}
}

func scalarAttentionBackward(a Attention, dqkv, dy, qkv []uint16) {
	D, scale := a.headDim(), a.scale()
	q, k, v := make([]float32, a.T*D), make([]float32, a.T*D), make([]float32, a.T*D)
	dk, dv := make([]float32, a.T*D), make([]float32, a.T*D)
	p, dp, dyt, dq := make([]float32, a.T), make([]float32, a.T), make([]float32, D), make([]float32, D)
	for bh := range a.B * a.H {
		b, h := bh/a.H, bh%a.H
		scalarHead(a, qkv, b, h, q, k, v)
		clear(dk)
		clear(dv)
		for t := range a.T {
			scalarProbs(a, p, q, k, t, scale)
			for d := range D {
				dyt[d] = bf16.ToFloat32(dy[(b*a.T+t)*a.C+h*D+d])
			}
			var sum float32
			for u := 0; u <= t; u++ {
				dp[u] = scalarDot(dyt, v[u*D:(u+1)*D])
				scalarAxpy(dv[u*D:(u+1)*D], p[u], dyt)
				sum += float32(p[u] * dp[u])
			}
			clear(dq)
			qt := q[t*D : (t+1)*D]
			for u := 0; u <= t; u++ {
				ds := float32(p[u] * (dp[u] - sum))
				scalarAxpy(dq, ds, k[u*D:(u+1)*D])
				scalarAxpy(dk[u*D:(u+1)*D], ds, qt)
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
}

// warpSum adds term(c) for c < C as a warp of 32 threads does: thread j
// adds the terms of its groups of 8 columns (j, j+32, j+64, … counted in
// groups) in ascending c; then each round every thread adds the sum of
// the thread whose number differs in bit m, for m = 16, 8, 4, 2, 1.
func warpSum(C int, term func(c int) float32) float32 {
	var lane [32]float32
	for j := range lane {
		for g := j; 8*g < C; g += 32 {
			for c := 8 * g; c < min(8*g+8, C); c++ {
				lane[j] += term(c)
			}
		}
	}
	for m := 16; m >= 1; m /= 2 {
		var next [32]float32
		for j := range lane {
			next[j] = lane[j] + lane[j^m]
		}
		lane = next
	}
	return lane[0]
}

func scalarLayerNormForward(l LayerNorm, y []uint16, mean, rstd []float32, x, g, b []uint16) {
	for n := range l.N {
		row := x[n*l.C : (n+1)*l.C]
		s := warpSum(l.C, func(c int) float32 { return bf16.ToFloat32(row[c]) })
		m := s / float32(l.C)
		ss := warpSum(l.C, func(c int) float32 {
			d := bf16.ToFloat32(row[c]) - m
			return float32(d * d)
		})
		rs := float32(1 / math.Sqrt(float64(ss/float32(l.C)+LayerNormEps)))
		mean[n], rstd[n] = m, rs
		out := y[n*l.C : (n+1)*l.C]
		for c, v := range row {
			norm := float32((bf16.ToFloat32(v) - m) * rs)
			out[c] = bf16.FromFloat32(float32(norm*bf16.ToFloat32(g[c])) + bf16.ToFloat32(b[c]))
		}
	}
}

func scalarLayerNormBackward(l LayerNorm, dx, dg, db []uint16, dy, x, g []uint16, mean, rstd []float32) {
	for n := range l.N {
		xr, dyr := x[n*l.C:(n+1)*l.C], dy[n*l.C:(n+1)*l.C]
		m, rs := mean[n], rstd[n]
		dnorm := func(c int) float32 { return float32(bf16.ToFloat32(dyr[c]) * bf16.ToFloat32(g[c])) }
		sd := warpSum(l.C, dnorm) / float32(l.C)
		sdn := warpSum(l.C, func(c int) float32 {
			norm := float32((bf16.ToFloat32(xr[c]) - m) * rs)
			return float32(dnorm(c) * norm)
		}) / float32(l.C)
		out := dx[n*l.C : (n+1)*l.C]
		for c := range l.C {
			norm := float32((bf16.ToFloat32(xr[c]) - m) * rs)
			dnorm := float32(bf16.ToFloat32(dyr[c]) * bf16.ToFloat32(g[c]))
			out[c] = bf16.FromFloat32(float32(rs * (dnorm - sd - float32(norm*sdn))))
		}
	}
	for c := range l.C {
		var sg, sb float32
		for n := range l.N {
			d := bf16.ToFloat32(dy[n*l.C+c])
			norm := float32((bf16.ToFloat32(x[n*l.C+c]) - mean[n]) * rstd[n])
			sg += float32(d * norm)
			sb += d
		}
		dg[c], db[c] = bf16.FromFloat32(sg), bf16.FromFloat32(sb)
	}
}

func scalarGELUForward(y, x []uint16) {
	for i := range x {
		v := bf16.ToFloat32(x[i])
		u := float32(geluK * (v + float32(geluA*float32(float32(v*v)*v))))
		y[i] = bf16.FromFloat32(float32(float32(0.5*v) * (1 + float32(math.Tanh(float64(u))))))
	}
}

func scalarGELUBackward(dx, dy, x []uint16) {
	for i := range x {
		v := bf16.ToFloat32(x[i])
		v2 := float32(v * v)
		u := float32(geluK * (v + float32(geluA*float32(v2*v))))
		t := float32(math.Tanh(float64(u)))
		du := float32(geluK * (1 + float32(3*geluA*v2)))
		d := float32(0.5*(1+t)) + float32(float32(float32(0.5*v)*(1-float32(t*t)))*du)
		dx[i] = bf16.FromFloat32(float32(bf16.ToFloat32(dy[i]) * d))
	}
}

func scalarAdd(dst, a, b []uint16) {
	for i := range dst {
		dst[i] = bf16.FromFloat32(bf16.ToFloat32(a[i]) + bf16.ToFloat32(b[i]))
	}
}

func scalarEmbeddingForward(e Embedding, x []uint16, tokens []int32, wte, wpe []uint16) {
	for n := range e.B * e.T {
		tok, pos := int(tokens[n]), n%e.T
		for c := range e.C {
			x[n*e.C+c] = bf16.FromFloat32(bf16.ToFloat32(wte[tok*e.C+c]) + bf16.ToFloat32(wpe[pos*e.C+c]))
		}
	}
}

func scalarEmbeddingBackward(e Embedding, dwte, dwpe, dx []uint16, tokens []int32) {
	acc := make([]float32, e.C)
	for v := range e.V {
		clear(acc)
		for n := range e.B * e.T {
			if int(tokens[n]) == v {
				for c := range e.C {
					acc[c] += bf16.ToFloat32(dx[n*e.C+c])
				}
			}
		}
		bf16.FromFloat32s(dwte[v*e.C:(v+1)*e.C], acc)
	}
	for t := range e.T {
		clear(acc)
		for b := range e.B {
			for c := range e.C {
				acc[c] += bf16.ToFloat32(dx[(b*e.T+t)*e.C+c])
			}
		}
		bf16.FromFloat32s(dwpe[t*e.C:(t+1)*e.C], acc)
	}
}

func scalarCrossEntropy(ce CrossEntropy, dlogits []uint16, losses []float32, logits []uint16, targets []int32, gradScale float32) {
	e := make([]float32, ce.V)
	for n := range ce.N {
		row := logits[n*ce.V : (n+1)*ce.V]
		for v := range e {
			e[v] = bf16.ToFloat32(row[v])
		}
		m := float32(math.Inf(-1))
		for _, l := range e {
			m = max(m, l)
		}
		tgt := int(targets[n])
		lt := e[tgt]
		var s float32
		for v, l := range e {
			x := float32(math.Exp(float64(l - m)))
			e[v] = x
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
}
