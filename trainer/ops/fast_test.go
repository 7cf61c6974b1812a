package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"lcttop/trainer/internal/par"
	"lcttop/trainer/internal/vec"
)

// specialBF16 are patterns every op must carry like its scalar version:
// zeros of both signs, subnormals, infinities, NaNs, the largest values.
var specialBF16 = []uint16{0x0000, 0x8000, 0x0001, 0x807f, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x7f7f, 0xff7f}

// randSpecial is randBF16 with about one value in every 1/rate replaced by
// a special pattern (none when rate is 0).
func randSpecial(r *rand.Rand, n int, scale float64, rate float64) []uint16 {
	v := randBF16(r, n, scale)
	for i := range v {
		if rate > 0 && r.Float64() < rate {
			v[i] = specialBF16[r.IntN(len(specialBF16))]
		}
	}
	return v
}

// sameBF16 says whether two results agree: the same bits, or both NaN
// (where two NaNs meet, which payload survives is the compiler's and the
// CPU's choice; Go fixes no operand order).
func sameBF16(a, b uint16) bool { return a == b || a&0x7fff > 0x7f80 && b&0x7fff > 0x7f80 }

func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

func assertSame(t *testing.T, what string, got, want []uint16) {
	t.Helper()
	for i := range want {
		if !sameBF16(got[i], want[i]) {
			t.Fatalf("%s[%d] = %#04x, the scalar version gives %#04x", what, i, got[i], want[i])
		}
	}
}

func assertSameF32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if !sameF32(got[i], want[i]) {
			t.Fatalf("%s[%d] = %#08x, the scalar version gives %#08x", what, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}

// eachVariant runs f under every vec implementation this machine has, with
// 1, 2 and 3 workers.
func eachVariant(t *testing.T, f func(t *testing.T)) {
	for _, name := range vec.Names() {
		for _, w := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/workers=%d", name, w), func(t *testing.T) {
				restore, err := vec.Use(name)
				if err != nil {
					t.Fatal(err)
				}
				defer restore()
				old := par.SetWorkers(w)
				defer par.SetWorkers(old)
				f(t)
			})
		}
	}
}

// The rates of special values the fast-path tests use: none, and enough
// that most rows and columns meet one.
var specialRates = []float64{0, 0.02}

func TestLinearMatchesScalar(t *testing.T) {
	eachVariant(t, func(t *testing.T) {
		r := newRand(40)
		for _, l := range []Linear{{N: 1, In: 1, Out: 1}, {N: 9, In: 13, Out: 35}, {N: 70, In: 33, Out: 65}, {N: 64, In: 128, Out: 96}} {
			for _, rate := range specialRates {
				x, w, b := randSpecial(r, l.N*l.In, 1, rate), randSpecial(r, l.Out*l.In, 0.1, rate), randSpecial(r, l.Out, 0.1, rate)
				dy := randSpecial(r, l.N*l.Out, 1, rate)
				y, wy := make([]uint16, l.N*l.Out), make([]uint16, l.N*l.Out)
				l.Forward(y, x, w, b)
				scalarLinearForward(l, wy, x, w, b)
				assertSame(t, "y", y, wy)
				l.Forward(y, x, w, nil)
				scalarLinearForward(l, wy, x, w, nil)
				assertSame(t, "y without bias", y, wy)
				dx, dw, db := make([]uint16, l.N*l.In), make([]uint16, l.Out*l.In), make([]uint16, l.Out)
				wdx, wdw, wdb := make([]uint16, l.N*l.In), make([]uint16, l.Out*l.In), make([]uint16, l.Out)
				l.BackwardInput(dx, dy, w)
				l.BackwardWeight(dw, db, dy, x)
				scalarLinearBackward(l, wdx, wdw, wdb, dy, x, w)
				assertSame(t, "dx", dx, wdx)
				assertSame(t, "dW", dw, wdw)
				assertSame(t, "db", db, wdb)
			}
		}
	})
}

func TestAttentionMatchesScalar(t *testing.T) {
	eachVariant(t, func(t *testing.T) {
		r := newRand(41)
		for _, a := range []Attention{{B: 1, T: 1, C: 4, H: 2}, {B: 2, T: 9, C: 16, H: 4}, {B: 2, T: 37, C: 96, H: 2}, {B: 1, T: 64, C: 128, H: 4}} {
			for _, rate := range []float64{0, 0.0005} {
				qkv, dy := randSpecial(r, a.B*a.T*3*a.C, 1, rate), randSpecial(r, a.B*a.T*a.C, 1, rate)
				y, wy := make([]uint16, len(dy)), make([]uint16, len(dy))
				a.Forward(y, qkv)
				scalarAttentionForward(a, wy, qkv)
				assertSame(t, "y", y, wy)
				d, wd := make([]uint16, len(qkv)), make([]uint16, len(qkv))
				a.Backward(d, dy, qkv)
				scalarAttentionBackward(a, wd, dy, qkv)
				assertSame(t, "dqkv", d, wd)
			}
		}
	})
}

// TestGELUEveryPattern: the tables give the scalar formulas' bits for all
// 65,536 inputs.
func TestGELUEveryPattern(t *testing.T) {
	x := make([]uint16, 1<<16)
	for i := range x {
		x[i] = uint16(i)
	}
	r := newRand(42)
	dy := randSpecial(r, len(x), 1, 0.01)
	y, wy := make([]uint16, len(x)), make([]uint16, len(x))
	GELUForward(y, x)
	scalarGELUForward(wy, x)
	assertSame(t, "gelu", y, wy)
	dx, wdx := make([]uint16, len(x)), make([]uint16, len(x))
	GELUBackward(dx, dy, x)
	scalarGELUBackward(wdx, dy, x)
	assertSame(t, "gelu backward", dx, wdx)
}

func TestElementwiseMatchesScalar(t *testing.T) {
	eachVariant(t, func(t *testing.T) {
		r := newRand(43)
		for _, shape := range [][2]int{{1, 3}, {9, 37}, {70, 128}, {4, 777}} {
			N, C := shape[0], shape[1]
			for _, rate := range specialRates {
				l := LayerNorm{N: N, C: C}
				x, g, b, dy := randSpecial(r, N*C, 1, rate), randSpecial(r, C, 1, rate), randSpecial(r, C, 0.1, rate), randSpecial(r, N*C, 1, rate)
				y, wy := make([]uint16, N*C), make([]uint16, N*C)
				mean, rstd, wmean, wrstd := make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N)
				l.Forward(y, mean, rstd, x, g, b)
				scalarLayerNormForward(l, wy, wmean, wrstd, x, g, b)
				assertSame(t, "layernorm y", y, wy)
				assertSameF32(t, "layernorm mean", mean, wmean)
				assertSameF32(t, "layernorm rstd", rstd, wrstd)
				dx, dg, db := make([]uint16, N*C), make([]uint16, C), make([]uint16, C)
				wdx, wdg, wdb := make([]uint16, N*C), make([]uint16, C), make([]uint16, C)
				l.Backward(dx, dg, db, dy, x, g, wmean, wrstd)
				scalarLayerNormBackward(l, wdx, wdg, wdb, dy, x, g, wmean, wrstd)
				assertSame(t, "layernorm dx", dx, wdx)
				assertSame(t, "layernorm dg", dg, wdg)
				assertSame(t, "layernorm db", db, wdb)

				sum, wsum := make([]uint16, N*C), make([]uint16, N*C)
				Add(sum, x, dy)
				scalarAdd(wsum, x, dy)
				assertSame(t, "add", sum, wsum)

				e := Embedding{B: 1, T: N, C: C, V: 11}
				tokens := make([]int32, N)
				for i := range tokens {
					tokens[i] = int32(r.IntN(e.V))
				}
				wte, wpe := randSpecial(r, e.V*C, 1, rate), randSpecial(r, N*C, 1, rate)
				ex, wex := make([]uint16, N*C), make([]uint16, N*C)
				e.Forward(ex, tokens, wte, wpe)
				scalarEmbeddingForward(e, wex, tokens, wte, wpe)
				assertSame(t, "embedding", ex, wex)
				dwte, dwpe, wdwte, wdwpe := make([]uint16, e.V*C), make([]uint16, N*C), make([]uint16, e.V*C), make([]uint16, N*C)
				e.Backward(dwte, dwpe, dy, tokens)
				scalarEmbeddingBackward(e, wdwte, wdwpe, dy, tokens)
				assertSame(t, "embedding dwte", dwte, wdwte)
				assertSame(t, "embedding dwpe", dwpe, wdwpe)

				ce := CrossEntropy{N: N, V: C}
				targets := make([]int32, N)
				for i := range targets {
					targets[i] = int32(r.IntN(C))
				}
				losses, wlosses := make([]float32, N), make([]float32, N)
				dl, wdl := make([]uint16, N*C), make([]uint16, N*C)
				ce.ForwardBackward(dl, losses, x, targets, 1/float32(N))
				scalarCrossEntropy(ce, wdl, wlosses, x, targets, 1/float32(N))
				assertSame(t, "cross-entropy gradient", dl, wdl)
				assertSameF32(t, "cross-entropy losses", losses, wlosses)
			}
		}
	})
}
