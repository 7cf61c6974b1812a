package ops

import "testing"

func TestAddGradientReference(t *testing.T) {
	// y = a + b: dy/da = dy/db = 1, checked against finite differences.
	r := newRand(60)
	a, b, dy := randF64(r, 8), randF64(r, 8), randF64(r, 8)
	obj := func() float64 {
		y := make([]float64, len(a))
		for i := range y {
			y[i] = a[i] + b[i]
		}
		return dotF64(dy, y)
	}
	assertGradient(t, "a", a, dy, obj)
	assertGradient(t, "b", b, dy, obj)
}

func TestAddMatchesReference(t *testing.T) {
	r := newRand(61)
	a, b := randBF16(r, 5000, 1), randBF16(r, 5000, 1)
	want := make([]float64, len(a))
	fa, fb := f64s(a), f64s(b)
	for i := range want {
		want[i] = fa[i] + fb[i]
	}
	got := make([]uint16, len(a))
	Add(got, a, b)
	assertClose(t, "sum", got, want, 1.0/256, 0)
	Add(a, a, b) // in place
	for i := range a {
		if a[i] != got[i] {
			t.Fatalf("element %d differs in place", i)
		}
	}
}
