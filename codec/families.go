package codec

import (
	"math"
	"sync"
)

// Each parametric family models |x| at unit scale; familyMass gives its mass
// in the binade [2^r, 2^(r+1)) for r = familyMinBinade..familyMaxBinade.
const (
	familyMinBinade = -150
	familyMaxBinade = 150
	familyBinades   = familyMaxBinade - familyMinBinade + 1
	// unitExponent is the BF16 exponent byte of values in [1, 2).
	unitExponent = 127
	// maxShift bounds the shift search (format.md §2).
	maxShift = 255
)

// familyTable is a family's fixed table: lengths by binade (0 = escaped) and ESC's length.
type familyTable struct {
	lengths [familyBinades]uint8
	escLen  uint8
}

var (
	familyOnce   sync.Once
	familyTables [Empirical]familyTable
)

// familyMass is P(r) of format.md §2, evaluated exactly as written there.
// Explicit float64 conversions forbid fused multiply-adds, so every platform
// computes the same weights and hence the same tables.
func familyMass(d Distribution, r int) float64 {
	lo := math.Ldexp(1, r)
	hi := math.Ldexp(1, r+1)
	switch d {
	case Gaussian:
		return float64(math.Erf(float64(hi/math.Sqrt2)) - math.Erf(float64(lo/math.Sqrt2)))
	case Laplace:
		return float64(math.Exp(-lo) - math.Exp(-hi))
	case PowerLaw:
		return float64(float64(1/float64(1+lo)) - float64(1/float64(1+hi)))
	}
	panic("codec: familyMass of non-parametric distribution") // unreachable: callers pass Gaussian..PowerLaw
}

// family returns the fixed table of a parametric distribution, built once.
func family(d Distribution) *familyTable {
	familyOnce.Do(func() {
		for _, fd := range []Distribution{Gaussian, Laplace, PowerLaw} {
			w := make([]float64, familyBinades)
			for i := range w {
				w[i] = familyMass(fd, familyMinBinade+i)
			}
			lens, esc, err := OptimalLengths(w, MaxCodeLen)
			if err != nil {
				panic("codec: family table " + fd.String() + ": " + err.Error()) // the weights are constants
			}
			copy(familyTables[fd].lengths[:], lens)
			familyTables[fd].escLen = esc
		}
	})
	return &familyTables[d]
}

// shiftedLength is a family table's length for exponent e under shift s (0 = escaped).
func (t *familyTable) shiftedLength(e, s int) uint8 {
	i := e - unitExponent - s - familyMinBinade
	if i < 0 || i >= familyBinades {
		return 0
	}
	return t.lengths[i]
}

// bestShift is the shift in −255..255 minimising the sampled cost, ties to the smaller shift.
func (t *familyTable) bestShift(h *Histogram) int {
	type bin struct {
		e     int
		count uint64
	}
	var bins [256]bin
	nb := 0
	for e, c := range h {
		if c != 0 {
			bins[nb] = bin{e, c}
			nb++
		}
	}
	esc := uint64(t.escLen) + literalBits
	best, bestCost := -maxShift, uint64(math.MaxUint64)
	for s := -maxShift; s <= maxShift; s++ {
		var cost uint64
		for _, b := range bins[:nb] {
			if l := t.shiftedLength(b.e, s); l != 0 {
				cost += b.count * uint64(l)
			} else {
				cost += b.count * esc
			}
		}
		if cost < bestCost {
			best, bestCost = s, cost
		}
	}
	return best
}
