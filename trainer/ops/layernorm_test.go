package ops

import (
	"math"
	"testing"
)

func layerNormRef(l LayerNorm, x, g, b []float64) []float64 {
	y := make([]float64, l.N*l.C)
	for n := range l.N {
		row := x[n*l.C : (n+1)*l.C]
		var m, v float64
		for _, t := range row {
			m += t
		}
		m /= float64(l.C)
		for _, t := range row {
			v += (t - m) * (t - m)
		}
		rs := 1 / math.Sqrt(v/float64(l.C)+LayerNormEps)
		for c, t := range row {
			y[n*l.C+c] = (t-m)*rs*g[c] + b[c]
		}
	}
	return y
}

func layerNormBackwardRef(l LayerNorm, dy, x, g []float64) (dx, dg, db []float64) {
	dx, dg, db = make([]float64, l.N*l.C), make([]float64, l.C), make([]float64, l.C)
	for n := range l.N {
		row := x[n*l.C : (n+1)*l.C]
		var m, v float64
		for _, t := range row {
			m += t
		}
		m /= float64(l.C)
		for _, t := range row {
			v += (t - m) * (t - m)
		}
		rs := 1 / math.Sqrt(v/float64(l.C)+LayerNormEps)
		var sd, sdn float64
		for c, t := range row {
			norm := (t - m) * rs
			dn := dy[n*l.C+c] * g[c]
			sd += dn
			sdn += dn * norm
			dg[c] += dy[n*l.C+c] * norm
			db[c] += dy[n*l.C+c]
		}
		for c, t := range row {
			norm := (t - m) * rs
			dn := dy[n*l.C+c] * g[c]
			dx[n*l.C+c] = rs * (dn - sd/float64(l.C) - norm*sdn/float64(l.C))
		}
	}
	return
}

func TestLayerNormGradientReference(t *testing.T) {
	r := newRand(10)
	l := LayerNorm{N: 3, C: 6}
	x, g, b, dy := randF64(r, l.N*l.C), randF64(r, l.C), randF64(r, l.C), randF64(r, l.N*l.C)
	dx, dg, db := layerNormBackwardRef(l, dy, x, g)
	obj := func() float64 { return dotF64(dy, layerNormRef(l, x, g, b)) }
	assertGradient(t, "x", x, dx, obj)
	assertGradient(t, "g", g, dg, obj)
	assertGradient(t, "b", b, db, obj)
}

func TestLayerNormMatchesReference(t *testing.T) {
	r := newRand(11)
	l := LayerNorm{N: 9, C: 48}
	x, g, b, dy := randBF16(r, l.N*l.C, 2), randBF16(r, l.C, 1), randBF16(r, l.C, 0.5), randBF16(r, l.N*l.C, 1)
	y := make([]uint16, l.N*l.C)
	mean, rstd := make([]float32, l.N), make([]float32, l.N)
	l.Forward(y, mean, rstd, x, g, b)
	assertClose(t, "y", y, layerNormRef(l, f64s(x), f64s(g), f64s(b)), 1.0/128, 1e-4)
	dx, dg, db := make([]uint16, l.N*l.C), make([]uint16, l.C), make([]uint16, l.C)
	l.Backward(dx, dg, db, dy, x, g, mean, rstd)
	rdx, rdg, rdb := layerNormBackwardRef(l, f64s(dy), f64s(x), f64s(g))
	assertClose(t, "dx", dx, rdx, 1.0/128, 1e-3)
	assertClose(t, "dg", dg, rdg, 1.0/128, 1e-3)
	assertClose(t, "db", db, rdb, 1.0/128, 1e-3)
}

func TestLayerNormDeterministicAcrossWorkers(t *testing.T) {
	r := newRand(12)
	l := LayerNorm{N: 37, C: 24}
	x, g, b, dy := randBF16(r, l.N*l.C, 2), randBF16(r, l.C, 1), randBF16(r, l.C, 0.5), randBF16(r, l.N*l.C, 1)
	sameForWorkers(t, "layernorm", func() [][]uint16 {
		y := make([]uint16, l.N*l.C)
		mean, rstd := make([]float32, l.N), make([]float32, l.N)
		l.Forward(y, mean, rstd, x, g, b)
		dx, dg, db := make([]uint16, l.N*l.C), make([]uint16, l.C), make([]uint16, l.C)
		l.Backward(dx, dg, db, dy, x, g, mean, rstd)
		return [][]uint16{y, dx, dg, db}
	})
}
