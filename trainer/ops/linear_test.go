package ops

import (
	"testing"

	"lcttop/trainer/bf16"
)

// linearRef is y = x·Wᵀ + b in float64.
func linearRef(l Linear, x, w, b []float64) []float64 {
	y := make([]float64, l.N*l.Out)
	for i := range l.N {
		for o := range l.Out {
			s := b[o]
			for k := range l.In {
				s += x[i*l.In+k] * w[o*l.In+k]
			}
			y[i*l.Out+o] = s
		}
	}
	return y
}

// linearBackwardRef returns dx, dW, db for upstream gradient dy, in float64.
func linearBackwardRef(l Linear, dy, x, w []float64) (dx, dw, db []float64) {
	dx = make([]float64, l.N*l.In)
	dw = make([]float64, l.Out*l.In)
	db = make([]float64, l.Out)
	for i := range l.N {
		for o := range l.Out {
			g := dy[i*l.Out+o]
			db[o] += g
			for k := range l.In {
				dx[i*l.In+k] += g * w[o*l.In+k]
				dw[o*l.In+k] += g * x[i*l.In+k]
			}
		}
	}
	return
}

func TestLinearGradientReference(t *testing.T) {
	r := newRand(1)
	l := Linear{N: 3, In: 5, Out: 4}
	x, w, b := randF64(r, l.N*l.In), randF64(r, l.Out*l.In), randF64(r, l.Out)
	dy := randF64(r, l.N*l.Out)
	dx, dw, db := linearBackwardRef(l, dy, x, w)
	obj := func() float64 { return dotF64(dy, linearRef(l, x, w, b)) }
	assertGradient(t, "x", x, dx, obj)
	assertGradient(t, "W", w, dw, obj)
	assertGradient(t, "b", b, db, obj)
}

func TestLinearMatchesReference(t *testing.T) {
	r := newRand(2)
	for _, l := range []Linear{{N: 7, In: 13, Out: 11}, {N: 16, In: 64, Out: 96}, {N: 1, In: 3, Out: 1}} {
		x, w, b := randBF16(r, l.N*l.In, 1), randBF16(r, l.Out*l.In, 0.1), randBF16(r, l.Out, 0.1)
		dy := randBF16(r, l.N*l.Out, 1)
		y := make([]uint16, l.N*l.Out)
		l.Forward(y, x, w, b)
		assertClose(t, "y", y, linearRef(l, f64s(x), f64s(w), f64s(b)), 1.0/128, 1e-4)
		dx, dw, db := make([]uint16, l.N*l.In), make([]uint16, l.Out*l.In), make([]uint16, l.Out)
		l.BackwardInput(dx, dy, w)
		l.BackwardWeight(dw, db, dy, x)
		rdx, rdw, rdb := linearBackwardRef(l, f64s(dy), f64s(x), f64s(w))
		assertClose(t, "dx", dx, rdx, 1.0/128, 1e-4)
		assertClose(t, "dW", dw, rdw, 1.0/128, 1e-4)
		assertClose(t, "db", db, rdb, 1.0/128, 1e-4)
	}
}

// TestLinearExactOrder pins the documented summation: one float32
// accumulator per output, ascending index, bias last, one rounding to BF16.
func TestLinearExactOrder(t *testing.T) {
	r := newRand(3)
	l := Linear{N: 5, In: 37, Out: 19}
	x, w, b := randBF16(r, l.N*l.In, 1), randBF16(r, l.Out*l.In, 1), randBF16(r, l.Out, 1)
	dy := randBF16(r, l.N*l.Out, 1)
	f := bf16.ToFloat32
	y, dx, dw, db := make([]uint16, l.N*l.Out), make([]uint16, l.N*l.In), make([]uint16, l.Out*l.In), make([]uint16, l.Out)
	l.Forward(y, x, w, b)
	l.BackwardInput(dx, dy, w)
	l.BackwardWeight(dw, db, dy, x)
	for i := range l.N {
		for o := range l.Out {
			var s float32
			for k := range l.In {
				s += float32(f(x[i*l.In+k]) * f(w[o*l.In+k]))
			}
			if want := bf16.FromFloat32(s + f(b[o])); y[i*l.Out+o] != want {
				t.Fatalf("y[%d][%d] = %#04x, want %#04x", i, o, y[i*l.Out+o], want)
			}
		}
		for k := range l.In {
			var s float32
			for o := range l.Out {
				s += float32(f(dy[i*l.Out+o]) * f(w[o*l.In+k]))
			}
			if want := bf16.FromFloat32(s); dx[i*l.In+k] != want {
				t.Fatalf("dx[%d][%d] = %#04x, want %#04x", i, k, dx[i*l.In+k], want)
			}
		}
	}
	for o := range l.Out {
		var sb float32
		for i := range l.N {
			sb += f(dy[i*l.Out+o])
		}
		if db[o] != bf16.FromFloat32(sb) {
			t.Fatalf("db[%d] = %#04x, want %#04x", o, db[o], bf16.FromFloat32(sb))
		}
		for k := range l.In {
			var s float32
			for i := range l.N {
				s += float32(f(dy[i*l.Out+o]) * f(x[i*l.In+k]))
			}
			if want := bf16.FromFloat32(s); dw[o*l.In+k] != want {
				t.Fatalf("dW[%d][%d] = %#04x, want %#04x", o, k, dw[o*l.In+k], want)
			}
		}
	}
}

func TestLinearDeterministicAcrossWorkers(t *testing.T) {
	r := newRand(4)
	l := Linear{N: 33, In: 40, Out: 70}
	x, w, b, dy := randBF16(r, l.N*l.In, 1), randBF16(r, l.Out*l.In, 1), randBF16(r, l.Out, 1), randBF16(r, l.N*l.Out, 1)
	sameForWorkers(t, "linear", func() [][]uint16 {
		y, dx, dw, db := make([]uint16, l.N*l.Out), make([]uint16, l.N*l.In), make([]uint16, l.Out*l.In), make([]uint16, l.Out)
		l.Forward(y, x, w, b)
		l.BackwardInput(dx, dy, w)
		l.BackwardWeight(dw, db, dy, x)
		return [][]uint16{y, dx, dw, db}
	})
}

func BenchmarkLinearForward(b *testing.B) {
	r := newRand(5)
	l := Linear{N: 256, In: 128, Out: 512}
	x, w, bias := randBF16(r, l.N*l.In, 1), randBF16(r, l.Out*l.In, 1), randBF16(r, l.Out, 1)
	y := make([]uint16, l.N*l.Out)
	b.SetBytes(int64(2 * (len(x) + len(w) + len(y))))
	for b.Loop() {
		l.Forward(y, x, w, bias)
	}
	b.ReportMetric(float64(2*l.N*l.In*l.Out)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkLinearBackwardWeight(b *testing.B) {
	r := newRand(6)
	l := Linear{N: 256, In: 128, Out: 512}
	x, dy := randBF16(r, l.N*l.In, 1), randBF16(r, l.N*l.Out, 1)
	dw, db := make([]uint16, l.Out*l.In), make([]uint16, l.Out)
	b.SetBytes(int64(2 * (len(x) + len(dy) + len(dw))))
	for b.Loop() {
		l.BackwardWeight(dw, db, dy, x)
	}
	b.ReportMetric(float64(2*l.N*l.In*l.Out)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
