package codec

import "fmt"

// The serialised header (format.md §5): the fixed fields, then the codebook
// as 128 bytes of nibbles, compactly as its coded range, or not at all where
// the header's fields name the family table that gives it.
const (
	fixedHeaderBytes  = 32
	fullCodebookBytes = 128
)

// flagCompactCodebook, bit 1 of the header's flags, says that the codebook
// is stored as its coded range: the first and last coded exponents, then
// their lengths, two a byte.
const flagCompactCodebook = 2

// flagDerivedCodebook, bit 2 of the header's flags, says that the header
// stores no lengths: distribution, shape, zero level (byte 30) and shift
// name the family table that gives them.
const flagDerivedCodebook = 4

// codedRange is the first and last exponent cb codes; ok is false when it
// codes none.
func codedRange(cb *Codebook) (lo, hi int, ok bool) {
	lo, hi = -1, -1
	for e, l := range cb.Lengths {
		if l != 0 {
			if lo < 0 {
				lo = e
			}
			hi = e
		}
	}
	return lo, hi, lo >= 0
}

// compactBytes is the size of cb stored as its coded range.
func compactBytes(lo, hi int) int { return 2 + (hi-lo+2)/2 }

// CompactCodebook says whether a tensor of layout l stores cb as its coded
// range: an empirical codebook in format version 2 where that is smaller
// than 128 bytes. (A parametric one of version 2 stores no lengths:
// DerivedCodebook.)
func CompactCodebook(cb *Codebook, l Layout) bool {
	if cb.Dist != Empirical || l.FormatVersion() != FormatVersion2 {
		return false
	}
	lo, hi, ok := codedRange(cb)
	return ok && compactBytes(lo, hi) < fullCodebookBytes
}

// DerivedCodebook says whether a tensor of layout l stores no lengths for
// cb: a parametric codebook in format version 2, which its family table,
// named by the header's fields, gives in full.
func DerivedCodebook(cb *Codebook, l Layout) bool {
	return cb.Dist != Empirical && cb.Dist.valid() && !l.v1()
}

// HeaderBytes is the size of t's header with its codebook.
func (t *Tensor) HeaderBytes() int {
	if t.Layout.v3() {
		n := fixedHeaderBytes + codebookBytes3(&t.Codebook)
		for b := range t.BlockCodebooks {
			if t.hasOwnCodebook(b) {
				n += codebookBytes3(&t.BlockCodebooks[b])
			}
		}
		return n
	}
	if t.DerivedCodebook {
		return fixedHeaderBytes
	}
	if t.CompactCodebook {
		if lo, hi, ok := codedRange(&t.Codebook); ok {
			return fixedHeaderBytes + compactBytes(lo, hi)
		}
	}
	return fixedHeaderBytes + fullCodebookBytes
}

// TensorHeaderBytes is the part of HeaderBytes a tensor stores once however
// its blocks are coded: the header and the tensor's codebook, without the
// codebooks blocks of version 3 have of their own. A tensor coded in pieces
// of whole blocks stores the pieces' bytes less this for all pieces but one.
func (t *Tensor) TensorHeaderBytes() int {
	if t.Layout.v3() {
		return fixedHeaderBytes + codebookBytes3(&t.Codebook)
	}
	return t.HeaderBytes()
}

// appendCodebook appends t's codebook as the header stores it.
func (t *Tensor) appendCodebook(b []byte) []byte {
	lens := &t.Codebook.Lengths
	if t.DerivedCodebook {
		return b
	}
	if !t.CompactCodebook {
		for k := range fullCodebookBytes {
			b = append(b, lens[2*k]|lens[2*k+1]<<4)
		}
		return b
	}
	lo, hi, _ := codedRange(&t.Codebook)
	b = append(b, byte(lo), byte(hi))
	for e := lo; e <= hi; e += 2 {
		x := lens[e]
		if e+1 <= hi {
			x |= lens[e+1] << 4
		}
		b = append(b, x)
	}
	return b
}

// checkCodebookForm: the header can store t's codebook in the form t names.
func (t *Tensor) checkCodebookForm() error {
	switch {
	case t.CompactCodebook && t.DerivedCodebook:
		return fmt.Errorf("codebook both compact and derived")
	case t.CompactCodebook && !CompactCodebook(&t.Codebook, t.Layout):
		return fmt.Errorf("compact codebook for a %s codebook in format version %d whose coded range is not shorter than 128 bytes", t.Codebook.Dist, t.Layout.FormatVersion())
	case t.DerivedCodebook && !DerivedCodebook(&t.Codebook, t.Layout):
		return fmt.Errorf("derived codebook for a %s codebook in format version %d (parametric, version 2 only)", t.Codebook.Dist, t.Layout.FormatVersion())
	}
	return nil
}

// parseCodebook reads the codebook's lengths from the start of b into t and
// returns the bytes after them; zeroLevel is the header's byte 30.
func (t *Tensor) parseCodebook(b []byte, zeroLevel int) ([]byte, error) {
	lens := &t.Codebook.Lengths
	if t.DerivedCodebook {
		if t.CompactCodebook {
			return nil, fmt.Errorf("flags name both a compact and a derived codebook")
		}
		if !DerivedCodebook(&t.Codebook, t.Layout) {
			return nil, fmt.Errorf("derived codebook for a %s codebook in format version %d (parametric, version 2 only)", t.Codebook.Dist, t.Layout.FormatVersion())
		}
		if err := t.Codebook.derive(zeroLevel); err != nil {
			return nil, err
		}
		return b, nil
	}
	if !t.CompactCodebook {
		if len(b) < fullCodebookBytes {
			return nil, fmt.Errorf("%d bytes after the fixed header, fewer than the 128 of the codebook", len(b))
		}
		for k := range fullCodebookBytes {
			lens[2*k] = b[k] & 0x0F
			lens[2*k+1] = b[k] >> 4
		}
		return b[fullCodebookBytes:], nil
	}
	if t.Codebook.Dist != Empirical || t.Layout.FormatVersion() != FormatVersion2 {
		return nil, fmt.Errorf("compact codebook for a %s codebook in format version %d (empirical, version 2 only)", t.Codebook.Dist, t.Layout.FormatVersion())
	}
	if len(b) < 2 {
		return nil, fmt.Errorf("%d bytes after the fixed header, fewer than the compact codebook's range", len(b))
	}
	lo, hi := int(b[0]), int(b[1])
	if hi < lo {
		return nil, fmt.Errorf("compact codebook: range %d..%d is empty", lo, hi)
	}
	size := compactBytes(lo, hi)
	if size >= fullCodebookBytes {
		return nil, fmt.Errorf("compact codebook: range %d..%d takes %d bytes, not fewer than 128", lo, hi, size)
	}
	if len(b) < size {
		return nil, fmt.Errorf("compact codebook: range %d..%d needs %d bytes, %d left", lo, hi, size, len(b))
	}
	for i, x := range b[2:size] {
		e := lo + 2*i
		lens[e] = x & 0x0F
		if e+1 <= hi {
			lens[e+1] = x >> 4
		} else if x>>4 != 0 {
			return nil, fmt.Errorf("compact codebook: padding nibble after exponent %d is %d, want 0", hi, x>>4)
		}
	}
	if lens[lo] == 0 || lens[hi] == 0 {
		return nil, fmt.Errorf("compact codebook: range %d..%d does not start and end with coded exponents (lengths %d, %d)", lo, hi, lens[lo], lens[hi])
	}
	return b[size:], nil
}
