package codec

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Each parametric family models |x| at unit scale; a shape's mass in the
// binade [2^r, 2^(r+1)) is given for r = familyMinBinade..familyMaxBinade.
const (
	familyMinBinade = -150
	familyMaxBinade = 150
	familyBinades   = familyMaxBinade - familyMinBinade + 1
	// unitExponent is the BF16 exponent byte of values in [1, 2).
	unitExponent = 127
	// maxShift bounds the shift search (format.md §2).
	maxShift = 255
)

// familyTable is one fixed table of a family: lengths by binade (0 =
// escaped), ESC's length and, from format version 2 on, exponent 0's length.
type familyTable struct {
	lengths [familyBinades]uint8
	escLen  uint8
	zeroLen uint8
	// first and last are the coded binades' range (first > last: none).
	first, last int
	// absent marks a shape and zero level whose construction gives exponent
	// 0 other than the level's length: no codebook uses it.
	absent bool
	// costs[costPad + i] is binade i's cost in bits (its length, or ESC plus
	// the literal), padded with the escape cost so that every shift the
	// search tries indexes it without a bounds test.
	costs [familyBinades + 2*costPad]uint8
	// ranked holds the coded lengths in ascending order, for lowerBound.
	ranked []uint8
}

// costPad pads familyTable.costs: an exponent 0..255 under a shift in
// −255..255 falls less than 256 binades outside the table.
const costPad = 256

// zeroLevels counts a family's tables per shape in format version 2: level 0
// leaves exponent 0 escaped; level l = 1..8 gives it a code of l bits.
const zeroLevels = MaxCodeLen + 1

// familyShape is one shape of a family (format.md §2): the family's |x| with
// its binade boundaries moved, optionally cut off at 1, mixed with a copy
// moved up, and mixed with outliers spread evenly over the binades.
type familyShape struct {
	// quarters places binade r's boundaries where the family has 2^(r·quarters/4):
	// 4 is the family itself, more narrows it (in binades), fewer widens it.
	quarters int
	// truncated keeps only the mass below 1 (binades r < 0), renormalised:
	// the sharp upper edge of uniformly initialised weights.
	truncated bool
	// copyBinades and copyQuarters mix in copyQuarters/4 of the shape moved
	// up by copyBinades binades: a second scale, as in embeddings (0: none).
	copyBinades, copyQuarters int
	// outlierLog2 spreads 2^−outlierLog2 of the mass evenly over all the
	// binades, so that rare far exponents share a shorter ESC (0: none).
	outlierLog2 int
}

// familyShapes lists the shapes in the order of the header's shape field
// (format.md §2). Shape 0 is the family itself, the only shape before the
// field existed; the others were chosen greedily on the real tensors, each
// the one that most narrowed the families' gap to empirical codebooks
// (shapes 1–17 by sampled bits, 18–21 by the ratios under every preset).
var familyShapes = [...]familyShape{
	{quarters: 4},
	{quarters: 3, copyBinades: 6, copyQuarters: 2, outlierLog2: 4},
	{quarters: 8},
	{quarters: 4, copyBinades: 3, copyQuarters: 1},
	{quarters: 1, outlierLog2: 4},
	{quarters: 6, truncated: true},
	{quarters: 5, copyBinades: 6, copyQuarters: 2},
	{quarters: 5},
	{quarters: 3, copyBinades: 6, copyQuarters: 1},
	{quarters: 2, outlierLog2: 4},
	{quarters: 4, copyBinades: 6, copyQuarters: 1},
	{quarters: 5, copyBinades: 3, copyQuarters: 1},
	{quarters: 5, copyBinades: 10, copyQuarters: 3, outlierLog2: 4},
	{quarters: 6, copyBinades: 6, copyQuarters: 1},
	{quarters: 2, copyBinades: 10, copyQuarters: 3, outlierLog2: 4},
	{quarters: 4, copyBinades: 16, copyQuarters: 3, outlierLog2: 4},
	{quarters: 6, copyBinades: 1, copyQuarters: 1},
	{quarters: 10, copyBinades: 2, copyQuarters: 1},
	{quarters: 3, copyBinades: 8, copyQuarters: 3, outlierLog2: 3},
	{quarters: 4, copyBinades: 6, copyQuarters: 1, outlierLog2: 6},
	{quarters: 3, copyBinades: 7, copyQuarters: 1},
	{quarters: 2, copyBinades: 12, copyQuarters: 3},
}

// quarterRoots are 2^(j/4) for j = 0..3 as float64 constants (format.md §2).
var quarterRoots = [4]float64{1, 0x1.306fe0a31b715p+0, 0x1.6a09e667f3bcdp+0, 0x1.ae89f995ad3adp+0}

// binadeEdge is 2^(n/4): exact powers of two times one of quarterRoots.
func binadeEdge(n int) float64 {
	j := n & 3 // n mod 4 in 0..3, also for negative n
	return math.Ldexp(quarterRoots[j], (n-j)/4)
}

// edgeMass is the family's mass of |x| in [lo, hi) at unit scale, as
// format.md §2 writes it. Explicit float64 conversions forbid fused
// multiply-adds, so every platform computes the same weights.
func edgeMass(d Distribution, lo, hi float64) float64 {
	switch d {
	case Gaussian:
		return float64(math.Erf(float64(hi/math.Sqrt2)) - math.Erf(float64(lo/math.Sqrt2)))
	case Laplace:
		return float64(math.Exp(-lo) - math.Exp(-hi))
	case PowerLaw:
		return float64(float64(1/float64(1+lo)) - float64(1/float64(1+hi)))
	}
	panic("codec: edgeMass of non-parametric distribution") // unreachable: callers pass Gaussian..PowerLaw
}

// familyMass is P(r) of format.md §2: the family's own mass in binade r.
func familyMass(d Distribution, r int) float64 {
	return edgeMass(d, math.Ldexp(1, r), math.Ldexp(1, r+1))
}

// shapeMasses is M(r) of format.md §2 for r = familyMinBinade.. in order.
func shapeMasses(d Distribution, sh familyShape) []float64 {
	m := make([]float64, familyBinades)
	for i := range m {
		r := familyMinBinade + i
		m[i] = edgeMass(d, binadeEdge(r*sh.quarters), binadeEdge((r+1)*sh.quarters))
	}
	if sh.truncated {
		var sum float64
		for i := range m {
			if familyMinBinade+i >= 0 {
				m[i] = 0
			}
			sum = float64(sum + m[i])
		}
		for i := range m {
			m[i] = float64(m[i] / sum)
		}
	}
	if sh.copyBinades != 0 {
		w := float64(sh.copyQuarters) / 4
		mixed := make([]float64, familyBinades)
		for i := range m {
			mixed[i] = float64(m[i] * float64(1-w))
			if j := i - sh.copyBinades; j >= 0 {
				mixed[i] = float64(mixed[i] + float64(m[j]*w))
			}
		}
		m = mixed
	}
	if sh.outlierLog2 != 0 {
		eps := math.Ldexp(1, -sh.outlierLog2)
		even := float64(eps / familyBinades)
		for i := range m {
			m[i] = float64(float64(m[i]*float64(1-eps)) + even)
		}
	}
	return m
}

var (
	familyOnce [Empirical]sync.Once
	// familyTables[d][shape][l] is family d's table of that shape at zero
	// level l. Shape 0, level 0 is the family alone, which version 1 applies
	// to every exponent, 0 included.
	familyTables [Empirical]*[len(familyShapes)][zeroLevels]familyTable
)

// family returns the fixed table of a parametric distribution's shape at a
// zero level, building the family's tables on first use. Level l > 0 is the
// optimal construction over the shape's masses scaled by 1 − 2^−l plus a
// zero symbol of weight 2^−l; where that does not give the zero symbol
// exactly l bits the table is absent. Shape 0 has every level.
func family(d Distribution, shape, level int) *familyTable {
	familyOnce[d].Do(func() { familyTables[d] = buildFamily(d) })
	return &familyTables[d][shape][level]
}

func buildFamily(d Distribution) *[len(familyShapes)][zeroLevels]familyTable {
	tables := new([len(familyShapes)][zeroLevels]familyTable)
	for si, sh := range familyShapes {
		tables[si] = shapeTables(d, sh)
		if si == 0 {
			for l := range zeroLevels {
				if tables[0][l].absent {
					panic(fmt.Sprintf("codec: family table %v shape 0 has no zero level %d", d, l))
				}
			}
		}
	}
	return tables
}

// shapeTables builds one shape's tables, one per zero level.
func shapeTables(d Distribution, sh familyShape) [zeroLevels]familyTable {
	var tables [zeroLevels]familyTable
	m := shapeMasses(d, sh)
	w := make([]float64, familyBinades+1) // the binades, then the zero symbol
	for l := range zeroLevels {
		q := math.Ldexp(1, -l)
		if l == 0 {
			q = 0
		}
		for i := range familyBinades {
			w[i] = float64(m[i] * float64(1-q))
		}
		w[familyBinades] = q
		lens, esc, err := OptimalLengths(w, MaxCodeLen)
		if err != nil {
			panic("codec: family table " + d.String() + ": " + err.Error())
		}
		t := &tables[l]
		if int(lens[familyBinades]) != l {
			t.absent = true
			continue
		}
		copy(t.lengths[:], lens)
		t.escLen = esc
		t.zeroLen = lens[familyBinades]
		t.first, t.last = familyBinades, -1
		for i := range t.costs {
			t.costs[i] = esc + literalBits
		}
		for i, x := range t.lengths {
			if x != 0 {
				t.first, t.last = min(t.first, i), i
				t.costs[costPad+i] = x
				t.ranked = append(t.ranked, x)
			}
		}
		slices.Sort(t.ranked)
	}
	return tables
}

// shiftedLength is a family table's length for exponent e under shift s (0 = escaped).
func (t *familyTable) shiftedLength(e, s int) uint8 {
	i := e - unitExponent - s - familyMinBinade
	if i < 0 || i >= familyBinades {
		return 0
	}
	return t.lengths[i]
}

// sampleBins are a histogram's nonzero counts from some exponent up, in
// exponent order (what a shift search reads) and largest first (what
// lowerBound reads).
type sampleBins struct {
	e       [256]int
	count   [256]uint64
	largest [256]uint64
	n       int
	total   uint64
}

func newSampleBins(h *Histogram, from int) *sampleBins {
	b := &sampleBins{}
	for e := from; e < len(h); e++ {
		if c := h[e]; c != 0 {
			b.e[b.n], b.count[b.n] = e, c
			b.n++
			b.total += c
		}
	}
	copy(b.largest[:], b.count[:b.n])
	slices.SortFunc(b.largest[:b.n], func(x, y uint64) int { return cmp.Compare(y, x) })
	return b
}

// lowerBound is at most the cost of the bins under any shift of t: distinct
// exponents fall in distinct binades, so the cheapest conceivable placement
// gives the largest counts the shortest codes and the rest the escape.
func (t *familyTable) lowerBound(b *sampleBins) uint64 {
	esc := uint64(t.escLen) + literalBits
	var cost uint64
	for k, c := range b.largest[:b.n] {
		if k < len(t.ranked) {
			cost += c * uint64(t.ranked[k])
		} else {
			cost += c * esc
		}
	}
	return cost
}

// bestShift is the shift in −255..255 minimising the sampled cost of the
// bins (the exponents from 1 up in version 2, where exponent 0 has its own
// code; from 0 in version 1), ties to the smaller shift; it returns the cost
// too.
func (t *familyTable) bestShift(b *sampleBins) (shift int, cost uint64) {
	esc := uint64(t.escLen) + literalBits
	// A shift whose coded binades miss every sampled exponent costs
	// total·esc, the most any shift costs: only the others need a look.
	best, bestCost := -maxShift, b.total*esc
	if b.n == 0 || t.last < 0 {
		return best, bestCost
	}
	// Binade i sits at exponent i + familyMinBinade + 127 + s.
	lo := max(b.e[0]-t.last-familyMinBinade-unitExponent, -maxShift)
	hi := min(b.e[b.n-1]-t.first-familyMinBinade-unitExponent, maxShift)
	es, counts := b.e[:b.n], b.count[:b.n]
	for s := lo; s <= hi; s++ {
		// Exponent e is binade e − 127 − s − familyMinBinade.
		costs := t.costs[costPad-unitExponent-s-familyMinBinade:]
		var cost uint64
		for k, e := range es {
			cost += counts[k] * uint64(costs[e])
		}
		if cost < bestCost {
			best, bestCost = s, cost
		}
	}
	return best, bestCost
}
