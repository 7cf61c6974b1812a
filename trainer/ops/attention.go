package ops

import (
	"math"
	"sync"

	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// Attention is causal multi-head self-attention over B sequences of T
// positions. Its input qkv is B×T×3C (q, k, v side by side, head h in
// columns h·D..(h+1)·D of each, D = C/H); its output y is B×T×C.
//
// The probabilities are not stored: the backward pass recomputes them with
// the same code, bit for bit, which costs O(T²·D) per head against the
// O(T²·H) bytes they would take.
//
// Each head's products run as tiles (package vec), each output a float32
// sum in the order documented below. Where a tile of rows needs fewer terms
// for its earlier rows (the causal mask), those rows take exact zeros
// instead: p = 0 (or ds = 0) times a finite value adds ±0 to a sum that is
// never −0, which leaves it unchanged. A head with an infinite or NaN input
// would turn those zeros into NaN, so it runs the same sums one output at a
// time instead.
type Attention struct{ B, T, C, H int }

func (a Attention) headDim() int { return a.C / a.H }

// scale is 1/sqrt(D) rounded to float32.
func (a Attention) scale() float32 { return float32(1 / math.Sqrt(float64(a.headDim()))) }

// Forward computes y_t = Σ_{u≤t} p_t[u]·v_u (ascending u) for every head,
// with p the softmax of probs.
func (a Attention) Forward(y, qkv []uint16) {
	par.For(a.B*a.H, 1, func(lo, hi int) {
		hs := a.getHead()
		defer headPool.Put(hs)
		for bh := lo; bh < hi; bh++ {
			b, h := bh/a.H, bh%a.H
			if !hs.load(a, qkv, nil, b, h) {
				a.forwardScalar(y, qkv, b, h)
				continue
			}
			hs.forward(a, y, b, h)
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
	par.For(a.B*a.H, 1, func(lo, hi int) {
		hs := a.getHead()
		defer headPool.Put(hs)
		for bh := lo; bh < hi; bh++ {
			b, h := bh/a.H, bh%a.H
			if !hs.load(a, qkv, dy, b, h) {
				a.backwardScalar(dqkv, dy, qkv, b, h)
				continue
			}
			hs.backward(a, dqkv, b, h)
		}
	})
}

// probs fills p[0..t] with the softmax over u ≤ t of s[u]·scale, where s
// holds the dots q_t·k_u (ascending d): max, e[u] = exp(s[u]·scale − max)
// rounded to float32, their sum in ascending u, p[u] = e[u]·(1/sum). p may
// be s; e is scratch of t+1 values.
func probs(p, s, e []float32, t int, scale float32) {
	p, s, e = p[:t+1], s[:t+1], e[:t+1]
	m := float32(math.Inf(-1))
	for u, d := range s {
		v := float32(d * scale)
		p[u] = v
		m = max(m, v)
	}
	vec.ExpShifted(e, p, m)
	var sum float32
	for _, x := range e {
		sum += x
	}
	inv := 1 / sum
	for u, x := range e {
		p[u] = float32(x * inv)
	}
}

// headScratch is one goroutine's float32 copy of a head and its products.
// Matrices are padded to tile multiples: Tp positions, Dp head columns.
type headScratch struct {
	T, D, Tp, Dp    int
	q, k, v, dy     []float32 // Tp×Dp, row t = position t
	qT, kT, vT, dyT []float32 // D×Tp, transposed
	s, sT, ds       []float32 // Tp×Tp: dots, then probabilities; p transposed or ds transposed; ds
	e, tile         []float32
	tileBF          []uint16
	zero            []float32
}

var headPool sync.Pool

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// getHead returns scratch sized for a's heads under the tile shape in use.
func (a Attention) getHead() *headScratch {
	mr, nr := vec.Tile()
	T, D := a.T, a.headDim()
	Tp := max(roundUp(T, mr), roundUp(T, nr))
	Dp := roundUp(D, nr)
	hs, _ := headPool.Get().(*headScratch)
	if hs == nil || hs.T != T || hs.D != D || hs.Tp != Tp || hs.Dp != Dp || len(hs.tile) != mr*nr {
		hs = &headScratch{T: T, D: D, Tp: Tp, Dp: Dp}
		n := func(k int) []float32 { return make([]float32, k) }
		hs.q, hs.k, hs.v, hs.dy = n(Tp*Dp), n(Tp*Dp), n(Tp*Dp), n(Tp*Dp)
		hs.qT, hs.kT, hs.vT, hs.dyT = n(D*Tp), n(D*Tp), n(D*Tp), n(D*Tp)
		hs.s, hs.sT, hs.ds = n(Tp*Tp), n(Tp*Tp), n(Tp*Tp)
		hs.e, hs.tile, hs.tileBF, hs.zero = n(Tp), n(mr*nr), make([]uint16, mr*nr), n(nr)
	}
	return hs
}

// load widens head h of sequence b (and its output gradient, if dy is not
// nil) into hs; false if any of it is infinite or NaN.
func (hs *headScratch) load(a Attention, qkv, dy []uint16, b, h int) bool {
	T, D, Tp, Dp := hs.T, hs.D, hs.Tp, hs.Dp
	for t := range T {
		row := qkv[(b*a.T+t)*3*a.C:]
		vec.Widen(hs.q[t*Dp:t*Dp+D], row[h*D:h*D+D])
		vec.Widen(hs.k[t*Dp:t*Dp+D], row[a.C+h*D:a.C+h*D+D])
		vec.Widen(hs.v[t*Dp:t*Dp+D], row[2*a.C+h*D:2*a.C+h*D+D])
		if dy != nil {
			vec.Widen(hs.dy[t*Dp:t*Dp+D], dy[(b*a.T+t)*a.C+h*D:(b*a.T+t)*a.C+h*D+D])
		}
	}
	ok := finite(hs.q[:T*Dp]) && finite(hs.k[:T*Dp]) && finite(hs.v[:T*Dp])
	if dy != nil {
		ok = ok && finite(hs.dy[:T*Dp])
	}
	if !ok {
		return false
	}
	transpose(hs.qT, hs.q, T, D, Dp, Tp)
	transpose(hs.kT, hs.k, T, D, Dp, Tp)
	if dy != nil {
		transpose(hs.vT, hs.v, T, D, Dp, Tp)
		transpose(hs.dyT, hs.dy, T, D, Dp, Tp)
	}
	return true
}

// finite says whether every value is finite.
func finite(x []float32) bool {
	for _, v := range x {
		if v-v != 0 {
			return false
		}
	}
	return true
}

// transpose writes dst[d*ldd + t] = src[t*lds + d] for t < rows, d < cols.
func transpose(dst, src []float32, rows, cols, lds, ldd int) {
	for t := range rows {
		row := src[t*lds : t*lds+cols]
		for d, v := range row {
			dst[d*ldd+t] = v
		}
	}
}

// scores fills s (row t, column u ≤ t) with q_t·k_u, d ascending: the tiles
// on or below the diagonal.
func (hs *headScratch) scores() {
	mr, nr := vec.Tile()
	T, D, Tp := hs.T, hs.D, hs.Tp
	for t0 := 0; t0 < T; t0 += mr {
		for u0 := 0; u0 < T && u0 < t0+mr; u0 += nr {
			vec.MulTile(hs.s[t0*Tp+u0:], Tp, hs.qT[t0:], Tp, hs.kT[u0:], Tp, D)
		}
	}
}

// forward computes head h of sequence b's output rows into y.
func (hs *headScratch) forward(a Attention, y []uint16, b, h int) {
	mr, nr := vec.Tile()
	T, D, Tp, Dp := hs.T, hs.D, hs.Tp, hs.Dp
	scale := a.scale()
	hs.scores()
	// p_t[u] goes to sT[u][t], zero above the diagonal: the rows of a tile
	// then read their probabilities side by side.
	clear(hs.sT)
	for t := range T {
		row := hs.s[t*Tp : t*Tp+t+1]
		probs(row, row, hs.e, t, scale)
		for u, p := range row {
			hs.sT[u*Tp+t] = p
		}
	}
	for t0 := 0; t0 < T; t0 += mr {
		K := min(T, t0+mr)
		for d0 := 0; d0 < D; d0 += nr {
			out := y[(b*a.T+t0)*a.C+h*D+d0:]
			if t0+mr <= T && d0+nr <= D {
				vec.MulTileBF16(out, a.C, hs.sT[t0:], Tp, hs.v[d0:], Dp, K, hs.zero)
				continue
			}
			vec.MulTileBF16(hs.tileBF, nr, hs.sT[t0:], Tp, hs.v[d0:], Dp, K, hs.zero)
			for i := range min(mr, T-t0) {
				n := min(nr, D-d0)
				copy(out[i*a.C:i*a.C+n], hs.tileBF[i*nr:i*nr+n])
			}
		}
	}
}

// backward computes head h of sequence b's part of dqkv.
func (hs *headScratch) backward(a Attention, dqkv []uint16, b, h int) {
	mr, nr := vec.Tile()
	T, D, Tp, Dp := hs.T, hs.D, hs.Tp, hs.Dp
	scale := a.scale()
	hs.scores()
	p, dp := hs.s, hs.ds // dp is computed into ds, then replaced by ds row by row
	for t := range T {
		row := p[t*Tp : t*Tp+Tp]
		probs(row, row, hs.e, t, scale)
		clear(row[t+1:])
	}
	for t0 := 0; t0 < T; t0 += mr {
		for u0 := 0; u0 < T && u0 < t0+mr; u0 += nr {
			vec.MulTile(dp[t0*Tp+u0:], Tp, hs.dyT[t0:], Tp, hs.vT[u0:], Tp, D)
		}
	}
	clear(hs.sT)
	for t := range T {
		pr, dr := p[t*Tp:t*Tp+t+1], dp[t*Tp:t*Tp+Tp]
		var sum float32
		for u, pu := range pr {
			sum += float32(pu * dr[u])
		}
		for u, pu := range pr {
			ds := float32(pu * (dr[u] - sum))
			dr[u] = ds
			hs.sT[u*Tp+t] = ds
		}
		clear(dr[t+1:])
	}
	ds, dsT := dp, hs.sT
	row := func(t, part int) []uint16 { return dqkv[(b*a.T+t)*3*a.C+part*a.C+h*D:] }
	// dq_t: rows t0.., terms u < min(T, t0+mr); dk_u and dv_u: rows u0..,
	// terms t from u0 (earlier t have ds = p = 0 for these u).
	for r0 := 0; r0 < T; r0 += mr {
		for d0 := 0; d0 < D; d0 += nr {
			nrows, ncols := min(mr, T-r0), min(nr, D-d0)
			vec.MulTile(hs.tile, nr, dsT[r0:], Tp, hs.k[d0:], Dp, min(T, r0+mr))
			for i := range nrows {
				vec.RoundScaled(row(r0+i, 0)[d0:d0+ncols], hs.tile[i*nr:i*nr+ncols], scale)
			}
			vec.MulTile(hs.tile, nr, ds[r0*Tp+r0:], Tp, hs.q[r0*Dp+d0:], Dp, T-r0)
			for i := range nrows {
				vec.RoundScaled(row(r0+i, 1)[d0:d0+ncols], hs.tile[i*nr:i*nr+ncols], scale)
			}
			vec.MulTileBF16(hs.tileBF, nr, p[r0*Tp+r0:], Tp, hs.dy[r0*Dp+d0:], Dp, T-r0, hs.zero)
			for i := range nrows {
				copy(row(r0+i, 2)[d0:d0+ncols], hs.tileBF[i*nr:i*nr+ncols])
			}
		}
	}
}

// forwardScalar is Forward for one head, one output at a time (the same
// sums without tiles; for heads with infinite or NaN inputs).
func (a Attention) forwardScalar(y, qkv []uint16, b, h int) {
	D, scale := a.headDim(), a.scale()
	q, k, v := a.headValues(qkv, b, h)
	p, s, e, acc := make([]float32, a.T), make([]float32, a.T), make([]float32, a.T), make([]float32, D)
	for t := range a.T {
		a.dots(s, q, k, t)
		probs(p, s, e, t, scale)
		clear(acc)
		for u := 0; u <= t; u++ {
			axpy(acc, p[u], v[u*D:(u+1)*D])
		}
		bf16.FromFloat32s(y[(b*a.T+t)*a.C+h*D:(b*a.T+t)*a.C+h*D+D], acc)
	}
}

// backwardScalar is Backward for one head, one output at a time.
func (a Attention) backwardScalar(dqkv, dy, qkv []uint16, b, h int) {
	D, scale := a.headDim(), a.scale()
	q, k, v := a.headValues(qkv, b, h)
	dk, dv := make([]float32, a.T*D), make([]float32, a.T*D)
	p, s, e, dp := make([]float32, a.T), make([]float32, a.T), make([]float32, a.T), make([]float32, a.T)
	dyt, dq := make([]float32, D), make([]float32, D)
	for t := range a.T {
		a.dots(s, q, k, t)
		probs(p, s, e, t, scale)
		bf16.ToFloat32s(dyt, dy[(b*a.T+t)*a.C+h*D:(b*a.T+t)*a.C+h*D+D])
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
		vec.RoundScaled(dqkv[(b*a.T+t)*3*a.C+h*D:(b*a.T+t)*3*a.C+h*D+D], dq, scale)
	}
	for t := range a.T {
		row := dqkv[(b*a.T+t)*3*a.C:]
		vec.RoundScaled(row[a.C+h*D:a.C+h*D+D], dk[t*D:(t+1)*D], scale)
		bf16.FromFloat32s(row[2*a.C+h*D:2*a.C+h*D+D], dv[t*D:(t+1)*D])
	}
}

// headValues widens head h of sequence b: q, k and v, each T×D float32.
func (a Attention) headValues(qkv []uint16, b, h int) (q, k, v []float32) {
	D := a.headDim()
	q, k, v = make([]float32, a.T*D), make([]float32, a.T*D), make([]float32, a.T*D)
	for t := range a.T {
		row := qkv[(b*a.T+t)*3*a.C:]
		bf16.ToFloat32s(q[t*D:(t+1)*D], row[h*D:h*D+D])
		bf16.ToFloat32s(k[t*D:(t+1)*D], row[a.C+h*D:a.C+h*D+D])
		bf16.ToFloat32s(v[t*D:(t+1)*D], row[2*a.C+h*D:2*a.C+h*D+D])
	}
	return q, k, v
}

// dots fills s[0..t] with q_t·k_u, d ascending.
func (a Attention) dots(s, q, k []float32, t int) {
	D := a.headDim()
	for u := 0; u <= t; u++ {
		s[u] = dot(q[t*D:(t+1)*D], k[u*D:(u+1)*D])
	}
}

// axpy adds s·x to acc element by element (products rounded, never fused).
func axpy(acc []float32, s float32, x []float32) {
	x = x[:len(acc)]
	for i, v := range x {
		acc[i] += float32(s * v)
	}
}
