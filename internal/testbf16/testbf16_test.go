package testbf16

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestGaussian(t *testing.T) {
	const n, scale = 100000, 0.02
	a := Gaussian(rand.New(rand.NewPCG(1, 2)), n, scale)
	b := Gaussian(rand.New(rand.NewPCG(1, 2)), n, scale)
	if len(a) != n {
		t.Fatalf("%d values, want %d", len(a), n)
	}
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different values")
	}
	var sum, sq float64
	for _, v := range a {
		f := float64(math.Float32frombits(uint32(v) << 16))
		sum += f
		sq += f * f
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	// Truncation to BF16 shrinks values by under 2^-7; 100000 draws pin the
	// deviation to about 0.3%.
	if math.Abs(mean) > 0.01*scale || math.Abs(sd-scale) > 0.02*scale {
		t.Fatalf("mean %g, standard deviation %g, want about 0 and %g", mean, sd, scale)
	}
}

func TestAllPatterns(t *testing.T) {
	ordered := AllPatterns(nil)
	for i, v := range ordered {
		if int(v) != i {
			t.Fatalf("in order: value %d is %#04x", i, v)
		}
	}
	a := AllPatterns(rand.New(rand.NewPCG(3, 4)))
	b := AllPatterns(rand.New(rand.NewPCG(3, 4)))
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different orders")
	}
	if slices.Equal(a, ordered) {
		t.Fatal("shuffled patterns are in order")
	}
	if !slices.Equal(slices.Sorted(slices.Values(a)), ordered) {
		t.Fatal("shuffled patterns are not every pattern once")
	}
}

func TestFirstDiff(t *testing.T) {
	for _, tc := range []struct {
		a, b []uint16
		want int
	}{
		{nil, nil, -1},
		{[]uint16{1, 2, 3}, []uint16{1, 2, 3}, -1},
		{[]uint16{1, 2, 3}, []uint16{1, 9, 3}, 1},
		{[]uint16{1, 2}, []uint16{1, 2, 3}, 2},
		{[]uint16{1, 2, 3}, []uint16{7}, 0},
		{[]uint16{5}, nil, 0},
	} {
		if got := FirstDiff(tc.a, tc.b); got != tc.want {
			t.Errorf("FirstDiff(%v, %v) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
