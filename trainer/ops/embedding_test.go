package ops

import "testing"

func embeddingRef(e Embedding, tokens []int32, wte, wpe []float64) []float64 {
	x := make([]float64, e.B*e.T*e.C)
	for n, tok := range tokens {
		for c := range e.C {
			x[n*e.C+c] = wte[int(tok)*e.C+c] + wpe[(n%e.T)*e.C+c]
		}
	}
	return x
}

func embeddingBackwardRef(e Embedding, dx []float64, tokens []int32) (dwte, dwpe []float64) {
	dwte, dwpe = make([]float64, e.V*e.C), make([]float64, e.T*e.C)
	for n, tok := range tokens {
		for c := range e.C {
			dwte[int(tok)*e.C+c] += dx[n*e.C+c]
			dwpe[(n%e.T)*e.C+c] += dx[n*e.C+c]
		}
	}
	return
}

func randTokens(e Embedding, seed uint64) []int32 {
	r := newRand(seed)
	tokens := make([]int32, e.B*e.T)
	for i := range tokens {
		tokens[i] = int32(r.IntN(e.V / 2)) // some tokens repeat, some never occur
	}
	return tokens
}

func TestEmbeddingGradientReference(t *testing.T) {
	r := newRand(40)
	e := Embedding{B: 2, T: 3, C: 4, V: 6}
	tokens := randTokens(e, 41)
	wte, wpe, dx := randF64(r, e.V*e.C), randF64(r, e.T*e.C), randF64(r, e.B*e.T*e.C)
	dwte, dwpe := embeddingBackwardRef(e, dx, tokens)
	obj := func() float64 { return dotF64(dx, embeddingRef(e, tokens, wte, wpe)) }
	assertGradient(t, "wte", wte, dwte, obj)
	assertGradient(t, "wpe", wpe, dwpe, obj)
}

func TestEmbeddingMatchesReference(t *testing.T) {
	r := newRand(42)
	e := Embedding{B: 3, T: 7, C: 16, V: 32}
	tokens := randTokens(e, 43)
	wte, wpe, dx := randBF16(r, e.V*e.C, 1), randBF16(r, e.T*e.C, 1), randBF16(r, e.B*e.T*e.C, 1)
	x := make([]uint16, e.B*e.T*e.C)
	e.Forward(x, tokens, wte, wpe)
	assertClose(t, "x", x, embeddingRef(e, tokens, f64s(wte), f64s(wpe)), 1.0/128, 1e-5)
	dwte, dwpe := make([]uint16, e.V*e.C), make([]uint16, e.T*e.C)
	for i := range dwte {
		dwte[i] = 0xffff // must be overwritten, zero where a token is absent
	}
	e.Backward(dwte, dwpe, dx, tokens)
	rdwte, rdwpe := embeddingBackwardRef(e, f64s(dx), tokens)
	assertClose(t, "dwte", dwte, rdwte, 1.0/128, 1e-5)
	assertClose(t, "dwpe", dwpe, rdwpe, 1.0/128, 1e-5)
}

func TestEmbeddingDeterministicAcrossWorkers(t *testing.T) {
	r := newRand(44)
	e := Embedding{B: 4, T: 9, C: 8, V: 64}
	tokens := randTokens(e, 45)
	wte, wpe, dx := randBF16(r, e.V*e.C, 1), randBF16(r, e.T*e.C, 1), randBF16(r, e.B*e.T*e.C, 1)
	sameForWorkers(t, "embedding", func() [][]uint16 {
		x, dwte, dwpe := make([]uint16, len(dx)), make([]uint16, e.V*e.C), make([]uint16, e.T*e.C)
		e.Forward(x, tokens, wte, wpe)
		e.Backward(dwte, dwpe, dx, tokens)
		return [][]uint16{x, dwte, dwpe}
	})
}
