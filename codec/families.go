package codec

import (
	"fmt"
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

// familyTable is a family's fixed table: lengths by binade (0 = escaped),
// ESC's length and, from format version 2 on, exponent 0's length.
type familyTable struct {
	lengths [familyBinades]uint8
	escLen  uint8
	zeroLen uint8
}

// zeroLevels counts a family's tables in format version 2: level 0 leaves
// exponent 0 escaped; level l = 1..8 gives it a code of l bits.
const zeroLevels = MaxCodeLen + 1

var (
	familyOnce sync.Once
	// familyTables[d][l] is family d's table at zero level l. Level 0 is the
	// family alone, which version 1 applies to every exponent, 0 included.
	familyTables [Empirical][zeroLevels]familyTable
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

// family returns the fixed table of a parametric distribution at zero level
// level, building every table once. Level l > 0 is the optimal construction
// over the family's masses scaled by 1 − 2^−l plus a zero symbol of weight
// 2^−l, which gets exactly l bits (checked here: the weights are constants).
func family(d Distribution, level int) *familyTable {
	familyOnce.Do(func() {
		for _, fd := range []Distribution{Gaussian, Laplace, PowerLaw} {
			for l := range zeroLevels {
				q := math.Ldexp(1, -l)
				if l == 0 {
					q = 0
				}
				w := make([]float64, familyBinades+1) // the binades, then the zero symbol
				for i := range familyBinades {
					w[i] = float64(familyMass(fd, familyMinBinade+i) * float64(1-q))
				}
				w[familyBinades] = q
				lens, esc, err := OptimalLengths(w, MaxCodeLen)
				if err != nil {
					panic("codec: family table " + fd.String() + ": " + err.Error())
				}
				if int(lens[familyBinades]) != l {
					panic(fmt.Sprintf("codec: family table %v at zero level %d gives exponent 0 %d bits", fd, l, lens[familyBinades]))
				}
				t := &familyTables[fd][l]
				copy(t.lengths[:], lens)
				t.escLen = esc
				t.zeroLen = lens[familyBinades]
			}
		}
	})
	return &familyTables[d][level]
}

// shiftedLength is a family table's length for exponent e under shift s (0 = escaped).
func (t *familyTable) shiftedLength(e, s int) uint8 {
	i := e - unitExponent - s - familyMinBinade
	if i < 0 || i >= familyBinades {
		return 0
	}
	return t.lengths[i]
}

// bestShift is the shift in −255..255 minimising the sampled cost of the
// exponents from `from` up (1 in version 2, where exponent 0 has its own
// code; 0 in version 1), ties to the smaller shift; it returns the cost too.
func (t *familyTable) bestShift(h *Histogram, from int) (shift int, cost uint64) {
	type bin struct {
		e     int
		count uint64
	}
	var bins [256]bin
	nb := 0
	var total uint64
	for e := from; e < len(h); e++ {
		if c := h[e]; c != 0 {
			bins[nb] = bin{e, c}
			nb++
			total += c
		}
	}
	esc := uint64(t.escLen) + literalBits
	// A shift whose coded binades miss every sampled exponent costs
	// total·esc, the most any shift costs: only the others need a look.
	first, last := familyBinades, -1
	for i, l := range t.lengths {
		if l != 0 {
			first, last = min(first, i), i
		}
	}
	best, bestCost := -maxShift, total*esc
	if nb == 0 || last < 0 {
		return best, bestCost
	}
	// Binade i sits at exponent i + familyMinBinade + 127 + s.
	lo := max(bins[0].e-last-familyMinBinade-unitExponent, -maxShift)
	hi := min(bins[nb-1].e-first-familyMinBinade-unitExponent, maxShift)
	for s := lo; s <= hi; s++ {
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
	return best, bestCost
}
