package ops

import (
	"lcttop/trainer/bf16"
	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// Embedding adds a token embedding (wte, V×C) and a position embedding
// (wpe, at least T×C) for B sequences of T tokens.
type Embedding struct{ B, T, C, V int }

// Forward computes x[b,t] = bf16(wte[tokens[b,t]] + wpe[t]).
func (e Embedding) Forward(x []uint16, tokens []int32, wte, wpe []uint16) {
	par.For(e.B*e.T, 16, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			tok, pos := int(tokens[n]), n%e.T
			vec.Add(x[n*e.C:(n+1)*e.C], wte[tok*e.C:(tok+1)*e.C], wpe[pos*e.C:(pos+1)*e.C])
		}
	})
}

// Backward computes dwte[v] = bf16(Σ_{n: tokens[n]=v} dx[n]) with n ascending
// (zero for tokens that do not occur) and dwpe[t] = bf16(Σ_b dx[b,t]) with b
// ascending; dwpe has T rows.
func (e Embedding) Backward(dwte, dwpe, dx []uint16, tokens []int32) {
	// Bucket the positions of each token, in ascending order, so that each
	// vocabulary row is summed by one goroutine in a fixed order.
	start := make([]int, e.V+1)
	for _, tok := range tokens[:e.B*e.T] {
		start[tok+1]++
	}
	for v := range e.V {
		start[v+1] += start[v]
	}
	order := make([]int, e.B*e.T)
	fill := append([]int(nil), start[:e.V]...)
	for n, tok := range tokens[:e.B*e.T] {
		order[fill[tok]] = n
		fill[tok]++
	}
	par.For(e.V, 8, func(lo, hi int) {
		acc := make([]float32, e.C)
		for v := lo; v < hi; v++ {
			clear(acc)
			for _, n := range order[start[v]:start[v+1]] {
				vec.Accumulate(acc, dx[n*e.C:(n+1)*e.C])
			}
			bf16.FromFloat32s(dwte[v*e.C:(v+1)*e.C], acc)
		}
	})
	par.For(e.T, 8, func(lo, hi int) {
		acc := make([]float32, e.C)
		for t := lo; t < hi; t++ {
			clear(acc)
			for b := range e.B {
				vec.Accumulate(acc, dx[(b*e.T+t)*e.C:(b*e.T+t+1)*e.C])
			}
			bf16.FromFloat32s(dwpe[t*e.C:(t+1)*e.C], acc)
		}
	})
}
