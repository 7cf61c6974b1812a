package ops

import (
	"math"
	"testing"
)

// attentionRef is causal multi-head attention in float64.
func attentionRef(a Attention, qkv []float64) []float64 {
	D := a.C / a.H
	y := make([]float64, a.B*a.T*a.C)
	at := func(b, t, col int) float64 { return qkv[(b*a.T+t)*3*a.C+col] }
	for b := range a.B {
		for h := range a.H {
			for t := range a.T {
				s := make([]float64, t+1)
				m := math.Inf(-1)
				for u := 0; u <= t; u++ {
					for d := range D {
						s[u] += at(b, t, h*D+d) * at(b, u, a.C+h*D+d)
					}
					s[u] /= math.Sqrt(float64(D))
					m = max(m, s[u])
				}
				var sum float64
				for u := range s {
					s[u] = math.Exp(s[u] - m)
					sum += s[u]
				}
				for u := range s {
					for d := range D {
						y[(b*a.T+t)*a.C+h*D+d] += s[u] / sum * at(b, u, 2*a.C+h*D+d)
					}
				}
			}
		}
	}
	return y
}

// attentionBackwardRef differentiates attentionRef analytically.
func attentionBackwardRef(a Attention, dy, qkv []float64) []float64 {
	D := a.C / a.H
	sc := 1 / math.Sqrt(float64(D))
	g := make([]float64, len(qkv))
	idx := func(b, t, col int) int { return (b*a.T+t)*3*a.C + col }
	for b := range a.B {
		for h := range a.H {
			for t := range a.T {
				p := make([]float64, t+1)
				m := math.Inf(-1)
				for u := 0; u <= t; u++ {
					for d := range D {
						p[u] += qkv[idx(b, t, h*D+d)] * qkv[idx(b, u, a.C+h*D+d)]
					}
					p[u] *= sc
					m = max(m, p[u])
				}
				var sum float64
				for u := range p {
					p[u] = math.Exp(p[u] - m)
					sum += p[u]
				}
				dp := make([]float64, t+1)
				var pdp float64
				for u := range p {
					p[u] /= sum
					for d := range D {
						dyv := dy[(b*a.T+t)*a.C+h*D+d]
						dp[u] += dyv * qkv[idx(b, u, 2*a.C+h*D+d)]
						g[idx(b, u, 2*a.C+h*D+d)] += p[u] * dyv
					}
					pdp += p[u] * dp[u]
				}
				for u := range p {
					ds := p[u] * (dp[u] - pdp) * sc
					for d := range D {
						g[idx(b, t, h*D+d)] += ds * qkv[idx(b, u, a.C+h*D+d)]
						g[idx(b, u, a.C+h*D+d)] += ds * qkv[idx(b, t, h*D+d)]
					}
				}
			}
		}
	}
	return g
}

func TestAttentionGradientReference(t *testing.T) {
	r := newRand(30)
	a := Attention{B: 2, T: 4, C: 6, H: 2}
	qkv, dy := randF64(r, a.B*a.T*3*a.C), randF64(r, a.B*a.T*a.C)
	assertGradient(t, "qkv", qkv, attentionBackwardRef(a, dy, qkv), func() float64 { return dotF64(dy, attentionRef(a, qkv)) })
}

func TestAttentionMatchesReference(t *testing.T) {
	r := newRand(31)
	a := Attention{B: 2, T: 9, C: 16, H: 4}
	qkv, dy := randBF16(r, a.B*a.T*3*a.C, 1), randBF16(r, a.B*a.T*a.C, 1)
	y := make([]uint16, a.B*a.T*a.C)
	a.Forward(y, qkv)
	assertClose(t, "y", y, attentionRef(a, f64s(qkv)), 1.0/128, 1e-3)
	dqkv := make([]uint16, len(qkv))
	a.Backward(dqkv, dy, qkv)
	assertClose(t, "dqkv", dqkv, attentionBackwardRef(a, f64s(dy), f64s(qkv)), 1.0/128, 1e-3)
}

// TestAttentionCausal: changing a later position must not change earlier outputs.
func TestAttentionCausal(t *testing.T) {
	r := newRand(32)
	a := Attention{B: 1, T: 8, C: 8, H: 2}
	qkv := randBF16(r, a.T*3*a.C, 1)
	y1 := make([]uint16, a.T*a.C)
	a.Forward(y1, qkv)
	for i := 5 * 3 * a.C; i < len(qkv); i++ {
		qkv[i] ^= 0x0100
	}
	y2 := make([]uint16, a.T*a.C)
	a.Forward(y2, qkv)
	for i := range 5 * a.C {
		if y1[i] != y2[i] {
			t.Fatalf("output %d (position %d) changed when only positions >= 5 changed", i, i/a.C)
		}
	}
}

func TestAttentionDeterministicAcrossWorkers(t *testing.T) {
	r := newRand(33)
	a := Attention{B: 3, T: 17, C: 24, H: 3}
	qkv, dy := randBF16(r, a.B*a.T*3*a.C, 1), randBF16(r, a.B*a.T*a.C, 1)
	sameForWorkers(t, "attention", func() [][]uint16 {
		y, dqkv := make([]uint16, len(dy)), make([]uint16, len(qkv))
		a.Forward(y, qkv)
		a.Backward(dqkv, dy, qkv)
		return [][]uint16{y, dqkv}
	})
}
