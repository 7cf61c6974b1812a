// Package testbf16 makes and compares BF16 test data for the tests of several
// packages (codec, codec/lctfile, gpu), so that each draws its values the same
// way. It imports nothing of the project, so codec's own tests can use it.
package testbf16

import (
	"math"
	"math/rand/v2"
)

// Gaussian draws n BF16 values of N(0, scale²) from r, each a float32
// truncated to its top 16 bits, as trained weights and gradients roughly are.
func Gaussian(r *rand.Rand, n int, scale float64) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = uint16(math.Float32bits(float32(r.NormFloat64()*scale)) >> 16)
	}
	return v
}

// AllPatterns returns every BF16 bit pattern once: in order, or shuffled by
// r when r is not nil.
func AllPatterns(r *rand.Rand) []uint16 {
	v := make([]uint16, 1<<16)
	for i := range v {
		v[i] = uint16(i)
	}
	if r != nil {
		r.Shuffle(len(v), func(i, j int) { v[i], v[j] = v[j], v[i] })
	}
	return v
}

// FirstDiff returns the first index at which a and b differ; where one is a
// prefix of the other, the shorter length; -1 when they are equal.
func FirstDiff[T comparable](a, b []T) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}
