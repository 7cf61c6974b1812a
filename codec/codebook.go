package codec

import (
	"fmt"
	"math"
)

// Codebook is a canonical prefix code over the 256 exponents and ESC
// (format.md §2), or in format version 3 over split symbols: an exponent
// and the top Split fraction bits, with an ESC code for each value of
// those bits.
type Codebook struct {
	Lengths [256]uint8 // code length of each exponent, 0 = escaped (with Split > 0: see SplitLengths)
	EscLen  uint8      // length of the ESC code, 1..8 (with Split > 0: see SplitEscLens)
	Shift   int16      // the family table's shift; 0 for empirical
	Shape   uint8      // the family table's shape (format.md §2); 0 for empirical and in version 1
	Dist    Distribution
	// Split is k, 0..3 (format version 3, empirical codebooks): a symbol is
	// an exponent and the top k fraction bits t, and with Signed the sign
	// s too (then k is at most 2), numbered (s<<8 | e)<<k | t; each value
	// of (s, t) has its own ESC code, ESC s<<k | t, whose literal is the
	// exponent.
	Split  uint8
	Signed bool
	// SplitLengths[symbol] is the length of that symbol's code (0:
	// escaped) and SplitEscLens[s<<k|t] the length of that ESC, when Split
	// > 0 or Signed. Lengths and EscLen then show the exponents' shortest
	// codes (0 where all of an exponent's symbols are escaped) and the
	// shortest ESC: a view for displays, which Cost and ExpectedBits also
	// read; the encoder and decoder use the split lengths.
	SplitLengths [256 << MaxSplit]uint8
	SplitEscLens [1 << MaxSplit]uint8
}

// FitCodebook builds the codebook of distribution d for a sample histogram,
// as format version 2 defines it: for a parametric family, the shape, zero
// level and shift of least sampled cost (exponent 0's code from the level,
// the shape's table moved by the shift fitted to the non-zero exponents);
// for Empirical (and for any value outside Distributions, which Encode
// rejects before getting here) the optimal construction over the histogram.
func FitCodebook(d Distribution, sample *Histogram) Codebook {
	return FitCodebookVersion(d, sample, FormatVersion)
}

// FitCodebookVersion is FitCodebook for format version 1 or 2. Version 1
// fitted a parametric family's shape 0 to every exponent, 0 included, with
// no code of its own for exponent 0; empirical codebooks are the same in both.
func FitCodebookVersion(d Distribution, sample *Histogram, version int) Codebook {
	cb := Codebook{Dist: d}
	if d == Empirical || !d.valid() {
		cb.Dist = Empirical
		w := make([]float64, 256)
		for e, c := range sample {
			w[e] = float64(c)
		}
		lens, esc, _ := OptimalLengths(w, MaxCodeLen) // weights are finite counts and maxLen valid: no error
		copy(cb.Lengths[:], lens)
		cb.EscLen = esc
		return cb
	}
	if version == FormatVersion1 {
		t := family(d, 0, 0)
		s, _ := t.bestShift(newSampleBins(sample, 0))
		cb.Shift = int16(s)
		cb.EscLen = t.escLen
		for e := range cb.Lengths {
			cb.Lengths[e] = t.shiftedLength(e, s)
		}
		return cb
	}
	bins := newSampleBins(sample, 1)
	// Least cost; ties to the smaller shape, then level, then shift (the
	// loops' order and bestShift's own rule).
	bestShape, bestLevel, bestShift, bestCost := 0, 0, 0, uint64(math.MaxUint64)
	for shape := range familyShapes {
		for level := range zeroLevels {
			t := family(d, shape, level)
			if t.absent {
				continue
			}
			zeroCost := uint64(t.escLen) + literalBits
			if t.zeroLen != 0 {
				zeroCost = uint64(t.zeroLen)
			}
			zeroCost *= sample[0]
			// A later table wins only by costing less, so one that cannot skips the search.
			if t.lowerBound(bins)+zeroCost >= bestCost {
				continue
			}
			s, cost := t.bestShift(bins)
			if cost += zeroCost; cost < bestCost {
				bestShape, bestLevel, bestShift, bestCost = shape, level, s, cost
			}
		}
	}
	cb.Shape = uint8(bestShape)
	cb.Shift = int16(bestShift)
	cb.EscLen = family(d, bestShape, bestLevel).escLen
	cb.fillLengths(family(d, bestShape, bestLevel))
	return cb
}

// fillLengths sets a version 2 parametric codebook's lengths to table t's
// under cb's shift, exponent 0 at t's zero level.
func (cb *Codebook) fillLengths(t *familyTable) {
	cb.Lengths[0] = t.zeroLen
	for e := 1; e < len(cb.Lengths); e++ {
		cb.Lengths[e] = t.shiftedLength(e, int(cb.Shift))
	}
}

// derive sets the lengths of a version 2 parametric codebook from its
// distribution, shape and shift and the zero level the header names, for a
// header that stores no lengths; escLen is left for validate to check
// against the table.
func (cb *Codebook) derive(zeroLevel int) error {
	if int(cb.Shape) >= len(familyShapes) {
		return fmt.Errorf("codebook: %s shape %d out of range 0..%d", cb.Dist, cb.Shape, len(familyShapes)-1)
	}
	if zeroLevel >= zeroLevels {
		return fmt.Errorf("codebook: %s zero level %d out of range 0..%d", cb.Dist, zeroLevel, zeroLevels-1)
	}
	if cb.Shift < -maxShift || cb.Shift > maxShift {
		return fmt.Errorf("codebook: shift %d out of range %d..%d", cb.Shift, -maxShift, maxShift)
	}
	t := family(cb.Dist, int(cb.Shape), zeroLevel)
	if t.absent {
		return fmt.Errorf("codebook: %s shape %d has no table at zero level %d", cb.Dist, cb.Shape, zeroLevel)
	}
	cb.fillLengths(t)
	return nil
}

// Validate checks that the codebook is one format version 2 allows: lengths
// in range, ESC coded, at most 255 coded exponents, Kraft's inequality; for a
// parametric family that the lengths are its table under the stated shift
// (exponent 0's length naming the zero level); for empirical a zero shift
// and a complete code (or, with nothing coded, escLen 1).
func (cb *Codebook) Validate() error {
	return cb.ValidateVersion(FormatVersion)
}

// ValidateVersion is Validate for format version 1 or 2; they differ only in
// a parametric family's exponent 0 (version 1: the family's table gives it).
func (cb *Codebook) ValidateVersion(version int) error {
	if err := cb.validate(version); err != nil {
		return fmt.Errorf("codec: %w", err)
	}
	return nil
}

// validate is ValidateVersion without the package prefix, for wrapping by
// callers that add their own.
func (cb *Codebook) validate(version int) error {
	if !cb.Dist.valid() {
		return fmt.Errorf("codebook: distribution %d out of range 0..3", uint8(cb.Dist))
	}
	if (cb.Split != 0 || cb.Signed) && (version != FormatVersion3 || cb.Dist != Empirical) {
		return fmt.Errorf("codebook: split %d (signed %v) for a %s codebook in format version %d (empirical, version 3 only)", cb.Split, cb.Signed, cb.Dist, version)
	}
	if !cb.split() && (cb.SplitLengths != [len(cb.SplitLengths)]uint8{} || cb.SplitEscLens != [len(cb.SplitEscLens)]uint8{}) {
		return fmt.Errorf("codebook: split lengths set in a codebook of split 0")
	}
	if version == FormatVersion3 && cb.Dist == Empirical {
		if cb.Shape != 0 || cb.Shift != 0 {
			return fmt.Errorf("codebook: empirical codebook has shape %d and shift %d, want 0", cb.Shape, cb.Shift)
		}
		return cb.validateSplit()
	}
	if cb.EscLen < 1 || cb.EscLen > MaxCodeLen {
		return fmt.Errorf("codebook: escLen %d out of range 1..%d", cb.EscLen, MaxCodeLen)
	}
	kraft := 1 << (MaxCodeLen - cb.EscLen) // Kraft sum scaled by 2^8
	coded := 0
	for e, l := range cb.Lengths {
		if l > MaxCodeLen {
			return fmt.Errorf("codebook: length of exponent %d is %d, above %d", e, l, MaxCodeLen)
		}
		if l != 0 {
			coded++
			kraft += 1 << (MaxCodeLen - l)
		}
	}
	if coded > 255 {
		return fmt.Errorf("codebook: %d exponents coded, at most 255 allowed", coded)
	}
	if kraft > 1<<MaxCodeLen {
		return fmt.Errorf("codebook: Kraft sum %d/256 exceeds 1", kraft)
	}
	if cb.Shift < -maxShift || cb.Shift > maxShift {
		return fmt.Errorf("codebook: shift %d out of range %d..%d", cb.Shift, -maxShift, maxShift)
	}
	if cb.Dist == Empirical {
		if cb.Shape != 0 {
			return fmt.Errorf("codebook: empirical codebook has shape %d, want 0", cb.Shape)
		}
		if cb.Shift != 0 {
			return fmt.Errorf("codebook: empirical codebook has shift %d, want 0", cb.Shift)
		}
		// The optimal construction always yields a complete code (package-merge
		// fills the Kraft sum exactly), except with nothing to code.
		if coded == 0 && cb.EscLen != 1 {
			return fmt.Errorf("codebook: empirical codebook codes nothing but escLen is %d, want 1", cb.EscLen)
		}
		if coded > 0 && kraft != 1<<MaxCodeLen {
			return fmt.Errorf("codebook: empirical code is incomplete (Kraft sum %d/256, want 256/256)", kraft)
		}
		return nil
	}
	if version == FormatVersion1 && cb.Shape != 0 {
		return fmt.Errorf("codebook: %s shape %d in format version 1, which has shape 0 only", cb.Dist, cb.Shape)
	}
	if int(cb.Shape) >= len(familyShapes) {
		return fmt.Errorf("codebook: %s shape %d out of range 0..%d", cb.Dist, cb.Shape, len(familyShapes)-1)
	}
	t, from := family(cb.Dist, 0, 0), 0
	if version != FormatVersion1 {
		// Exponent 0's length is the zero level, whose table gives the rest.
		t, from = family(cb.Dist, int(cb.Shape), int(cb.Lengths[0])), 1
		if t.absent {
			return fmt.Errorf("codebook: %s shape %d has no table at zero level %d (exponent 0's length)", cb.Dist, cb.Shape, cb.Lengths[0])
		}
	}
	if cb.EscLen != t.escLen {
		return fmt.Errorf("codebook: %s escLen %d, the shape %d table has %d", cb.Dist, cb.EscLen, cb.Shape, t.escLen)
	}
	for e := from; e < len(cb.Lengths); e++ {
		if l, want := cb.Lengths[e], t.shiftedLength(e, int(cb.Shift)); l != want {
			return fmt.Errorf("codebook: %s length of exponent %d is %d, the shape %d table under shift %d gives %d",
				cb.Dist, e, l, cb.Shape, cb.Shift, want)
		}
	}
	return nil
}

// Cost is the number of bits exponent e takes in a stream: its code length,
// or escLen + 8 when it is escaped.
func (cb *Codebook) Cost(e byte) int {
	if l := cb.Lengths[e]; l != 0 {
		return int(l)
	}
	return int(cb.EscLen) + literalBits
}

// ExpectedBits is the mean cost per exponent under h (0 when h is empty).
func (cb *Codebook) ExpectedBits(h *Histogram) float64 {
	var bits, total uint64
	for e, c := range h {
		bits += c * uint64(cb.Cost(byte(e)))
		total += c
	}
	if total == 0 {
		return 0
	}
	return float64(bits) / float64(total)
}

// Codes returns the canonical codes (right-aligned values; meaningful where
// the length is nonzero) of the exponents and of ESC: symbols ordered by
// (length, symbol) with ESC as symbol 256, code = 0, then for each symbol
// code <<= len − prev, assign, code++.
func (cb *Codebook) Codes() (codes [256]uint16, esc uint16) {
	var code uint16
	prev := 0
	first := true
	for l := 1; l <= MaxCodeLen; l++ {
		for s := 0; s <= escSymbol; s++ {
			var sl int
			if s == escSymbol {
				sl = int(cb.EscLen)
			} else {
				sl = int(cb.Lengths[s])
			}
			if sl != l {
				continue
			}
			if first {
				prev, first = l, false
			}
			code <<= uint(l - prev)
			prev = l
			if s == escSymbol {
				esc = code
			} else {
				codes[s] = code
			}
			code++
		}
	}
	return codes, esc
}

// TableEntry is one entry of the 256-entry decode table.
type TableEntry struct {
	Symbol uint16 // 0..255 an exponent, 256 ESC
	Len    uint8  // code length; 0 marks an invalid prefix
}

// DecodeTable maps the next 8 bits of a stream to the symbol whose code
// prefixes them. The codebook must be valid.
func (cb *Codebook) DecodeTable() [256]TableEntry {
	var t [256]TableEntry
	codes, esc := cb.Codes()
	fill := func(sym uint16, code uint16, l uint8) {
		if l == 0 || l > MaxCodeLen {
			return
		}
		lo := int(code) << (MaxCodeLen - l)
		hi := (int(code) + 1) << (MaxCodeLen - l)
		for i := lo; i < hi && i < len(t); i++ {
			t[i] = TableEntry{Symbol: sym, Len: l}
		}
	}
	for e, l := range cb.Lengths {
		fill(uint16(e), codes[e], l)
	}
	fill(escSymbol, esc, cb.EscLen)
	return t
}
