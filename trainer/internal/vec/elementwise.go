package vec

import (
	"math"
	"unsafe"
)

// The element-wise loops: each vectorises the longest prefix it can and
// finishes the rest here, one value at a time, with the same operations.

// ew are one implementation's element-wise loops (nil: Go only).
type ew struct {
	add           func(dst, a, b *uint16, n int)
	accumulate    func(acc *float32, src *uint16, n int)
	normRow       func(out, x *uint16, g, b *float32, n int, k *[2]float32)
	normGradRow   func(dx, x, dy *uint16, g *float32, n int, k *[4]float32)
	normParamGrad func(accg, accb *float32, x, dy *uint16, n int, k *[2]float32)
	// expShifted writes every lane and returns how many lanes were outside
	// the range it computes exactly (those the caller recomputes).
	expShifted func(dst, src *float32, n int, m float32) int
}

// prefix is how many of n values the vector loops take.
func prefix(n int, f bool) int {
	if !f {
		return 0
	}
	return n / cur.step * cur.step
}

// Add computes dst[i] = bf16(a[i] + b[i]); dst may be a or b.
func Add(dst, a, b []uint16) {
	n := len(dst)
	a, b = a[:n], b[:n]
	v := prefix(n, cur.ew.add != nil)
	if v > 0 {
		cur.ew.add(unsafe.SliceData(dst), unsafe.SliceData(a), unsafe.SliceData(b), v)
	}
	for i := v; i < n; i++ {
		dst[i] = roundOne(widenOne(a[i]) + widenOne(b[i]))
	}
}

// Accumulate adds the widened src to acc: acc[i] += float32(src[i]).
func Accumulate(acc []float32, src []uint16) {
	n := len(acc)
	src = src[:n]
	v := prefix(n, cur.ew.accumulate != nil)
	if v > 0 {
		cur.ew.accumulate(unsafe.SliceData(acc), unsafe.SliceData(src), v)
	}
	for i := v; i < n; i++ {
		acc[i] += widenOne(src[i])
	}
}

// NormRow is LayerNorm's output for one row:
// out[c] = bf16(((x[c] − mean)·rstd)·g[c] + b[c]), each step rounded to float32.
func NormRow(out, x []uint16, g, b []float32, mean, rstd float32) {
	n := len(out)
	x, g, b = x[:n], g[:n], b[:n]
	v := prefix(n, cur.ew.normRow != nil)
	if v > 0 {
		k := [2]float32{mean, rstd}
		cur.ew.normRow(unsafe.SliceData(out), unsafe.SliceData(x), unsafe.SliceData(g), unsafe.SliceData(b), v, &k)
	}
	for c := v; c < n; c++ {
		norm := float32((widenOne(x[c]) - mean) * rstd)
		out[c] = roundOne(float32(norm*g[c]) + b[c])
	}
}

// NormGradRow is LayerNorm's input gradient for one row: with
// norm = (x − mean)·rstd and dnorm = dy·g,
// dx[c] = bf16(rstd·((dnorm − sd) − norm·sdn)), each step rounded to float32.
func NormGradRow(dx, x, dy []uint16, g []float32, mean, rstd, sd, sdn float32) {
	n := len(dx)
	x, dy, g = x[:n], dy[:n], g[:n]
	v := prefix(n, cur.ew.normGradRow != nil)
	if v > 0 {
		k := [4]float32{mean, rstd, sd, sdn}
		cur.ew.normGradRow(unsafe.SliceData(dx), unsafe.SliceData(x), unsafe.SliceData(dy), unsafe.SliceData(g), v, &k)
	}
	for c := v; c < n; c++ {
		norm := float32((widenOne(x[c]) - mean) * rstd)
		dnorm := float32(widenOne(dy[c]) * g[c])
		dx[c] = roundOne(float32(rstd * (dnorm - sd - float32(norm*sdn))))
	}
}

// NormParamGrad adds one row's share of LayerNorm's parameter gradients:
// accg[c] += dy[c]·norm[c], accb[c] += dy[c], norm = (x − mean)·rstd.
func NormParamGrad(accg, accb []float32, x, dy []uint16, mean, rstd float32) {
	n := len(accg)
	accb, x, dy = accb[:n], x[:n], dy[:n]
	v := prefix(n, cur.ew.normParamGrad != nil)
	if v > 0 {
		k := [2]float32{mean, rstd}
		cur.ew.normParamGrad(unsafe.SliceData(accg), unsafe.SliceData(accb), unsafe.SliceData(x), unsafe.SliceData(dy), v, &k)
	}
	for c := v; c < n; c++ {
		d := widenOne(dy[c])
		norm := float32((widenOne(x[c]) - mean) * rstd)
		accg[c] += float32(d * norm)
		accb[c] += d
	}
}

// expLo and expHi bound the arguments the vector exp computes as math.Exp
// does; outside them (and for NaN) math.Exp itself is called.
const expLo, expHi = -708, 709

// ExpShifted computes dst[i] = float32(math.Exp(float64(src[i] − m))), the
// subtraction in float32: bit for bit what math.Exp gives (a test compares
// them). dst must not overlap src.
func ExpShifted(dst, src []float32, m float32) {
	n := len(src)
	dst = dst[:n]
	if n > 0 && &dst[0] == &src[0] {
		panic("vec: ExpShifted in place")
	}
	v := prefix(n, cur.ew.expShifted != nil)
	if v > 0 && cur.ew.expShifted(unsafe.SliceData(dst), unsafe.SliceData(src), v, m) > 0 {
		for i, x := range src[:v] {
			if d := x - m; !(d >= expLo && d <= expHi) {
				dst[i] = float32(math.Exp(float64(d)))
			}
		}
	}
	for i := v; i < n; i++ {
		dst[i] = float32(math.Exp(float64(src[i] - m)))
	}
}
