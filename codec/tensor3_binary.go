package codec

import (
	"encoding/binary"
	"fmt"
)

// Format version 3's header (format.md §7.5): byte 24 is the residue byte
// (split in bits 0–1, sign in bits 2–3), bytes 25–27 and 31 are 0; a
// block's unit byte has bit 7 set where the block has its own codebook.
const (
	residueByte             = 24
	flagsV3                 = flagPerBlock | flagDerivedCodebook
	ownCodebookBit          = 0x80
	emptyRangeLo, emptyRang = 0xFF, 0x00
	// signCodedField is the residue byte's sign field where the symbols
	// hold the sign (the codebook's Signed).
	signCodedField = 3
)

// codebookBytes3 is the size of cb's codebook section in version 3: none
// for a parametric codebook (the header names its table), else the coded
// range of exponents and every symbol's length in it, then the ESCs'.
func codebookBytes3(cb *Codebook) int {
	if cb.Dist != Empirical {
		return 0
	}
	c := cb.symCode()
	lo, hi, ok := codedRange(cb)
	nibbles := c.escapes()
	if ok {
		nibbles += (hi - lo + 1) << (c.k + c.sb)
	}
	return 2 + (nibbles+1)/2
}

// appendCodebook3 appends cb's version 3 codebook section.
func appendCodebook3(b []byte, cb *Codebook) []byte {
	if cb.Dist != Empirical {
		return b
	}
	c := cb.symCode()
	lo, hi, ok := codedRange(cb)
	if !ok {
		lo, hi = emptyRangeLo, emptyRang
	}
	b = append(b, byte(lo), byte(hi))
	var half byte
	odd := false
	put := func(x uint8) {
		if odd {
			b = append(b, half|x<<4)
		} else {
			half = x
		}
		odd = !odd
	}
	if ok {
		for sign := range 1 << c.sb {
			for s := (sign<<8 | lo) << c.k; s < (sign<<8|hi+1)<<c.k; s++ {
				put(c.lens[s])
			}
		}
	}
	for x := range c.escapes() {
		put(c.esc[x])
	}
	if odd {
		b = append(b, half)
	}
	return b
}

// parseCodebook3 reads an empirical version 3 codebook section of split k
// (signed: the sign in the symbols) from the start of b into cb and returns
// the bytes after it.
func parseCodebook3(b []byte, cb *Codebook, k uint, signed bool) ([]byte, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("codebook: %d bytes left, fewer than its range's 2", len(b))
	}
	*cb = Codebook{Dist: Empirical, Split: uint8(k), Signed: signed}
	if k > MaxSplit || signed && k == MaxSplit {
		return nil, fmt.Errorf("codebook: split %d with the sign in the symbols (at most %d)", k, MaxSplit-1)
	}
	c := cb.symCode()
	lo, hi := int(b[0]), int(b[1])
	nibbles := c.escapes()
	empty := lo == emptyRangeLo && hi == emptyRang
	switch {
	case empty:
	case hi < lo:
		return nil, fmt.Errorf("codebook: range %d..%d is empty and not the empty range's %d..%d", lo, hi, emptyRangeLo, emptyRang)
	default:
		nibbles += (hi - lo + 1) << (c.k + c.sb)
	}
	size := 2 + (nibbles+1)/2
	if len(b) < size {
		return nil, fmt.Errorf("codebook: range %d..%d needs %d bytes, %d left", lo, hi, size, len(b))
	}
	nib := func(i int) uint8 {
		x := b[2+i/2]
		if i%2 == 0 {
			return x & 0x0F
		}
		return x >> 4
	}
	if nibbles%2 == 1 && nib(nibbles) != 0 {
		return nil, fmt.Errorf("codebook: padding nibble is %d, want 0", nib(nibbles))
	}
	lens := cb.Lengths[:]
	if cb.split() {
		lens = cb.SplitLengths[:c.symbols()]
	}
	i := 0
	if !empty {
		for sign := range 1 << c.sb {
			for s := (sign<<8 | lo) << k; s < (sign<<8|hi+1)<<k; s++ {
				lens[s] = nib(i)
				i++
			}
		}
	}
	for x := range c.escapes() {
		if cb.split() {
			cb.SplitEscLens[x] = nib(i)
		} else {
			cb.EscLen = nib(i)
		}
		i++
	}
	if cb.split() {
		cb.setSplitView()
	}
	if !empty && (cb.Lengths[lo] == 0 || cb.Lengths[hi] == 0) {
		return nil, fmt.Errorf("codebook: range %d..%d does not start and end with coded exponents", lo, hi)
	}
	if err := cb.validateSplit(); err != nil {
		return nil, err
	}
	return b[size:], nil
}

// tailTables is how many blocks have tails (and so a length table).
func (t *Tensor) tailTables() int {
	n := 0
	for _, u := range t.TailUnits {
		if u != 0 {
			n++
		}
	}
	return n
}

// v3Bytes is a version 3 tensor's serialised size.
func (t *Tensor) v3Bytes() int {
	n := t.HeaderBytes()
	n += capacityBytes * len(t.BlockBytes)
	n += len(t.TailUnits) + tailTableBytes*t.tailTables()
	return n + len(t.SF) + len(t.Streams) + len(t.Overflow)
}

// appendBinary3 appends the version 3 serialisation of a checked tensor.
func (t *Tensor) appendBinary3(b []byte) []byte {
	b = t.appendHeader3(b)
	b = append(b, t.SF...)
	b = append(b, t.Streams...)
	return append(b, t.Overflow...)
}

// appendHeader3 appends what precedes a version 3 tensor's sections: the
// fixed header, the codebook, the capacities per block, the tail units,
// the blocks' own codebooks and the tail lengths.
func (t *Tensor) appendHeader3(b []byte) []byte {
	var h [fixedHeaderBytes]byte
	copy(h[0:4], tensorMagic)
	h[4] = FormatVersion3
	h[5] = byte(t.Layout.Preset)
	h[6] = byte(t.Codebook.Dist)
	if t.DerivedCodebook {
		h[7] = t.Codebook.EscLen
	}
	binary.LittleEndian.PutUint64(h[8:], uint64(t.N))
	binary.LittleEndian.PutUint32(h[16:], uint32(t.Layout.BlockSize))
	binary.LittleEndian.PutUint16(h[20:], uint16(t.Layout.StreamBytes))
	binary.LittleEndian.PutUint16(h[22:], uint16(t.Codebook.Shift))
	sign := byte(t.Layout.Sign)
	if t.Codebook.Signed {
		sign = signCodedField
	}
	h[residueByte] = t.Codebook.Split | sign<<2
	h[28] = t.Codebook.Shape
	if t.Layout.PerBlock {
		h[29] |= flagPerBlock
	}
	if t.DerivedCodebook {
		h[29] |= flagDerivedCodebook
		h[30] = t.Codebook.Lengths[0]
	}
	b = append(b, h[:]...)
	b = appendCodebook3(b, &t.Codebook)
	for _, c := range t.BlockBytes {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	for i, u := range t.TailUnits {
		if t.hasOwnCodebook(i) {
			u |= ownCodebookBit
		}
		b = append(b, u)
	}
	for i := range t.BlockCodebooks {
		if t.hasOwnCodebook(i) {
			b = appendCodebook3(b, &t.BlockCodebooks[i])
		}
	}
	for i, u := range t.TailUnits {
		if u != 0 {
			b = append(b, t.TailLens[i*tailTableBytes:(i+1)*tailTableBytes]...)
		}
	}
	return b
}

// parseHeader3 reads the rest of a version 3 header whose fixed fields
// common to every version t already holds, up to the sections; h is the
// whole input, body what follows the header and tails the length of the
// tail area its tables imply.
func (t *Tensor) parseHeader3(h []byte) (body []byte, tails int, err error) {
	flags, zeroLevel := h[29], h[30]
	if flags&^flagsV3 != 0 {
		return nil, 0, fmt.Errorf("flags (byte 29) %#x, want bits %#x (capacities per block) and %#x (derived codebook) only",
			flags, flagPerBlock, flagDerivedCodebook)
	}
	for _, i := range []int{25, 26, 27, 31} {
		if h[i] != 0 {
			return nil, 0, fmt.Errorf("reserved byte %d is %#x, want 0", i, h[i])
		}
	}
	rb := h[residueByte]
	split, sign := rb&3, Sign(rb>>2&3)
	if rb>>4 != 0 {
		return nil, 0, fmt.Errorf("residue byte (byte 24) %#x: want split in bits 0-1 and sign in bits 2-3 only", rb)
	}
	signed := sign == signCodedField
	if signed {
		sign = SignMixed
	}
	t.Layout.Sign = sign
	t.Layout.PerBlock = flags&flagPerBlock != 0
	t.DerivedCodebook = flags&flagDerivedCodebook != 0
	if flags&flagDerivedCodebook == 0 && zeroLevel != 0 {
		return nil, 0, fmt.Errorf("zero level (byte 30) is %d in a header without a derived codebook, want 0", zeroLevel)
	}
	if err := t.Layout.validate(); err != nil {
		return nil, 0, err
	}
	nb := t.Layout.Blocks(t.N)
	body = h[fixedHeaderBytes:]
	cb := &t.Codebook
	switch {
	case cb.Dist != Empirical:
		if !t.DerivedCodebook {
			return nil, 0, fmt.Errorf("a %s codebook without flag bit 2: version 3 derives every parametric codebook", cb.Dist)
		}
		if split != 0 || signed {
			return nil, 0, fmt.Errorf("a %s codebook with split %d or signed symbols (empirical only)", cb.Dist, split)
		}
		if err := cb.derive(int(zeroLevel)); err != nil {
			return nil, 0, err
		}
	case t.DerivedCodebook:
		return nil, 0, fmt.Errorf("derived codebook for an empirical codebook (parametric only)")
	default:
		if h[7] != 0 || h[22] != 0 || h[23] != 0 || h[28] != 0 {
			return nil, 0, fmt.Errorf("empirical codebook with escLen, shift or shape in the header (bytes 7, 22-23, 28), want 0")
		}
		if body, err = parseCodebook3(body, cb, uint(split), signed); err != nil {
			return nil, 0, err
		}
	}
	if err := t.Codebook.validate(FormatVersion3); err != nil {
		return nil, 0, err
	}
	if t.Layout.PerBlock {
		if len(body) < capacityBytes*nb {
			return nil, 0, fmt.Errorf("%d bytes after the codebook, fewer than the %d of %d capacities per block", len(body), capacityBytes*nb, nb)
		}
		t.BlockBytes = make([]uint16, nb)
		for i := range t.BlockBytes {
			t.BlockBytes[i] = binary.LittleEndian.Uint16(body[capacityBytes*i:])
		}
		body = body[capacityBytes*nb:]
	}
	if err := t.checkBlockBytes(); err != nil {
		return nil, 0, err
	}
	if len(body) < nb {
		return nil, 0, fmt.Errorf("%d bytes left, fewer than the %d blocks' tail units", len(body), nb)
	}
	t.TailUnits = append([]byte(nil), body[:nb]...)
	body = body[nb:]
	for b, u := range t.TailUnits {
		if u&ownCodebookBit == 0 {
			continue
		}
		t.TailUnits[b] = u &^ ownCodebookBit
		if cb.Dist != Empirical {
			return nil, 0, fmt.Errorf("block %d: a codebook of its own in a tensor of a %s codebook (empirical only)", b, cb.Dist)
		}
		if t.BlockCodebooks == nil {
			t.BlockCodebooks = make([]Codebook, nb)
			t.Layout.BlockCodebooks = true
		}
		if body, err = parseCodebook3(body, &t.BlockCodebooks[b], uint(split), signed); err != nil {
			return nil, 0, fmt.Errorf("block %d: %w", b, err)
		}
	}
	t.TailLens = make([]byte, nb*tailTableBytes)
	for b, u := range t.TailUnits {
		if u > maxTailUnitCode {
			return nil, 0, fmt.Errorf("block %d: tail unit code %d out of range 0..%d", b, u, maxTailUnitCode)
		}
		if u == 0 {
			continue
		}
		if len(body) < tailTableBytes {
			return nil, 0, fmt.Errorf("block %d: %d bytes left, fewer than its tail lengths' %d", b, len(body), tailTableBytes)
		}
		copy(t.TailLens[b*tailTableBytes:], body[:tailTableBytes])
		body = body[tailTableBytes:]
	}
	for b := range nb {
		tails += t.tailRegionBytes(b)
	}
	return body, tails, nil
}

// cutSections3 cuts the sections of a version 3 tensor whose header
// parseHeader3 read out of body (what follows the header in h, the whole
// input), after checking its length: with copyOut, copies of them in one
// allocation (capacities capped, so that reusing one, as an Encoder writing
// into t does, cannot clobber the next), else slices of h.
func (t *Tensor) cutSections3(h, body []byte, tails int, copyOut bool) error {
	w := ResidueBits(&t.Codebook, t.Layout.Sign)
	res, area := residueBytes(t.N, w), t.StreamAreaBytes()
	if want := res + area + tails; len(body) != want {
		return fmt.Errorf("%d bytes, the header and tables imply %d", len(h), len(h)-len(body)+want)
	}
	if copyOut {
		body = append([]byte(nil), body...)
	}
	cut := func(size int) []byte {
		s := body[:size:size]
		body = body[size:]
		return s
	}
	t.SF = cut(res)
	t.Streams = cut(area)
	t.Overflow = cut(tails)
	return t.checkStructure()
}

// checkStructure3 checks a version 3 tensor's sections against its layout
// and tables; stream bits are checked while decoding.
func (t *Tensor) checkStructure3() error {
	nb := t.Layout.Blocks(t.N)
	if len(t.BlockCodebooks) > 0 {
		if !t.Layout.BlockCodebooks || len(t.BlockCodebooks) != nb {
			return fmt.Errorf("%d codebooks per block for %d blocks (flag %v)", len(t.BlockCodebooks), nb, t.Layout.BlockCodebooks)
		}
		owned := 0
		for b := range t.BlockCodebooks {
			if !t.hasOwnCodebook(b) {
				if t.BlockCodebooks[b] != (Codebook{}) {
					return fmt.Errorf("block %d: a codebook with no ESC length", b)
				}
				continue
			}
			owned++
			c := &t.BlockCodebooks[b]
			if c.Dist != Empirical || c.Split != t.Codebook.Split || c.Signed != t.Codebook.Signed {
				return fmt.Errorf("block %d: a %s codebook of split %d (signed %v) in a tensor of split %d (signed %v): each block's must be empirical and alike",
					b, c.Dist, c.Split, c.Signed, t.Codebook.Split, t.Codebook.Signed)
			}
			if err := c.validate(FormatVersion3); err != nil {
				return fmt.Errorf("block %d: %w", b, err)
			}
		}
		if owned == 0 {
			return fmt.Errorf("codebooks per block, none of them a block's own")
		}
	} else if t.Layout.BlockCodebooks {
		return fmt.Errorf("layout with codebooks per block and none")
	}
	if t.DerivedCodebook != DerivedCodebook(&t.Codebook, t.Layout) || t.CompactCodebook {
		return fmt.Errorf("codebook form (derived %v, compact %v) for a %s codebook in format version 3", t.DerivedCodebook, t.CompactCodebook, t.Codebook.Dist)
	}
	if t.Codebook.Signed && t.Layout.Sign != SignMixed {
		return fmt.Errorf("symbols hold the sign of values whose sign is %v", t.Layout.Sign)
	}
	if len(t.Bitmaps) != 0 || len(t.Offsets) != 0 {
		return fmt.Errorf("spill bitmaps or overflow offsets in a version 3 tensor")
	}
	if w := ResidueBits(&t.Codebook, t.Layout.Sign); len(t.SF) != residueBytes(t.N, w) {
		return fmt.Errorf("residues hold %d bytes, want %d (%d bits each)", len(t.SF), residueBytes(t.N, w), w)
	}
	if want := t.StreamAreaBytes(); len(t.Streams) != want {
		return fmt.Errorf("stream heads hold %d bytes, want %d", len(t.Streams), want)
	}
	if len(t.TailUnits) != nb || len(t.TailLens) != nb*tailTableBytes {
		return fmt.Errorf("%d tail units and %d bytes of tail lengths for %d blocks", len(t.TailUnits), len(t.TailLens), nb)
	}
	tails := 0
	for b, u := range t.TailUnits {
		if u > maxTailUnitCode {
			return fmt.Errorf("block %d: tail unit code %d out of range 0..%d", b, u, maxTailUnitCode)
		}
		lens := t.TailLens[b*tailTableBytes : (b+1)*tailTableBytes]
		if u == 0 {
			for _, x := range lens {
				if x != 0 {
					return fmt.Errorf("block %d: tail lengths without a tail unit", b)
				}
			}
			continue
		}
		tails += t.tailRegionBytes(b)
	}
	if len(t.Overflow) != tails {
		return fmt.Errorf("tail area holds %d bytes, the tail lengths need %d", len(t.Overflow), tails)
	}
	return nil
}
