package codec

import (
	"encoding/binary"
	"fmt"
)

// tensorMagic opens a serialised tensor (format.md §5); the version byte
// after it is the layout's FormatVersion.
const tensorMagic = "LCTt"

// flagPerBlock, bit 0 of the header's flags (byte 29), says that a table of
// one C per block follows the header (format.md §5).
const flagPerBlock = 1

// AppendBinary appends the serialisation of t (format.md §5) to b.
func (t *Tensor) AppendBinary(b []byte) ([]byte, error) {
	if err := t.checkStructure(); err != nil {
		return b, fmt.Errorf("codec: marshal: %w", err)
	}
	if t.Layout.v3() {
		return t.appendBinary3(b), nil
	}
	b = t.appendHeader(b, len(t.Overflow))
	b = append(b, t.SF...)
	b = append(b, t.Streams...)
	b = append(b, t.Bitmaps...)
	for _, o := range t.Offsets {
		b = binary.LittleEndian.AppendUint32(b, o)
	}
	return append(b, t.Overflow...), nil
}

// appendHeader appends what precedes the sections: the fixed header (with
// overflowLen as the overflow length), the codebook and the capacities per
// block.
func (t *Tensor) appendHeader(b []byte, overflowLen int) []byte {
	var h [fixedHeaderBytes]byte
	copy(h[0:4], tensorMagic)
	h[4] = byte(t.Layout.FormatVersion())
	h[5] = byte(t.Layout.Preset)
	h[6] = byte(t.Codebook.Dist)
	h[7] = t.Codebook.EscLen
	binary.LittleEndian.PutUint64(h[8:], uint64(t.N))
	binary.LittleEndian.PutUint32(h[16:], uint32(t.Layout.BlockSize))
	binary.LittleEndian.PutUint16(h[20:], uint16(t.Layout.StreamBytes))
	binary.LittleEndian.PutUint16(h[22:], uint16(t.Codebook.Shift))
	binary.LittleEndian.PutUint32(h[24:], uint32(overflowLen))
	h[28] = t.Codebook.Shape
	if t.Layout.PerBlock {
		h[29] |= flagPerBlock
	}
	if t.CompactCodebook {
		h[29] |= flagCompactCodebook
	}
	if t.DerivedCodebook {
		h[29] |= flagDerivedCodebook
		h[30] = t.Codebook.Lengths[0] // the zero level
	}
	b = append(b, h[:]...)
	b = t.appendCodebook(b)
	for _, c := range t.BlockBytes {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return b
}

// MarshalBinary returns the serialisation of t; its length is t.StoredBytes().
func (t *Tensor) MarshalBinary() ([]byte, error) {
	return t.AppendBinary(make([]byte, 0, t.StoredBytes()))
}

// ParseTensor reads a serialised tensor, checking every field, the total
// length and the overflow bookkeeping; stream bits are checked when decoding.
// The tensor's sections are copies: b may be reused afterwards.
func ParseTensor(b []byte) (*Tensor, error) {
	t, body, overflowLen, err := parseHeader(b)
	if err != nil {
		return nil, err
	}
	if t.Layout.v3() {
		// One copy holds the byte sections, so that b may be reused.
		if err := t.cutSections3(b, body, overflowLen, true); err != nil {
			return nil, fmt.Errorf("codec: parse: %w", err)
		}
		return t, nil
	}
	nb := t.Layout.Blocks(t.N)
	area := t.StreamAreaBytes()
	want := t.N + area + nb*(bitmapBytes+offsetBytes) + overflowLen
	if len(body) != want {
		return nil, fmt.Errorf("codec: parse: %d bytes, the header implies %d", len(b), len(b)-len(body)+want)
	}
	// One copy holds every byte section; capacities are capped so that
	// reusing one section (an Encoder writing into t) cannot clobber the next.
	body = append([]byte(nil), body...)
	cut := func(size int) []byte {
		s := body[:size:size]
		body = body[size:]
		return s
	}
	t.SF = cut(t.N)
	t.Streams = cut(area)
	t.Bitmaps = cut(nb * bitmapBytes)
	offs := cut(nb * offsetBytes)
	t.Offsets = make([]uint32, nb)
	for i := range t.Offsets {
		t.Offsets[i] = binary.LittleEndian.Uint32(offs[offsetBytes*i:])
	}
	t.Overflow = cut(overflowLen)
	if err := t.checkStructure(); err != nil {
		return nil, fmt.Errorf("codec: parse: %w", err)
	}
	return t, nil
}

// parseHeader reads and checks what precedes the sections (fixed header,
// codebook, capacities per block; in version 3 the tail units, the blocks'
// codebooks and tail lengths too); body is the rest of b and overflowLen
// the length of the overflow (version 3: tail) area.
func parseHeader(b []byte) (t *Tensor, body []byte, overflowLen int, err error) {
	if len(b) < fixedHeaderBytes {
		return nil, nil, 0, fmt.Errorf("codec: parse: %d bytes, shorter than the %d-byte fixed header", len(b), fixedHeaderBytes)
	}
	if string(b[0:4]) != tensorMagic {
		return nil, nil, 0, fmt.Errorf("codec: parse: magic %q, want %q", b[0:4], tensorMagic)
	}
	t = &Tensor{}
	switch b[4] {
	case FormatVersion1, FormatVersion2, FormatVersion3:
		t.Layout = t.Layout.WithVersion(int(b[4]))
	default:
		return nil, nil, 0, fmt.Errorf("codec: parse: version %d, want %d, %d or %d", b[4], FormatVersion1, FormatVersion2, FormatVersion3)
	}
	if p := Preset(b[5]); !p.valid() {
		return nil, nil, 0, fmt.Errorf("codec: parse: preset %d out of range 0..3", b[5])
	} else {
		t.Layout.Preset = p
	}
	if d := Distribution(b[6]); !d.valid() {
		return nil, nil, 0, fmt.Errorf("codec: parse: distribution %d out of range 0..3", b[6])
	} else {
		t.Codebook.Dist = d
	}
	t.Codebook.EscLen = b[7]
	n := binary.LittleEndian.Uint64(b[8:])
	if n > MaxElements {
		return nil, nil, 0, fmt.Errorf("codec: parse: N = %d above %d", n, MaxElements)
	}
	t.N = int(n)
	t.Layout.BlockSize = int(binary.LittleEndian.Uint32(b[16:]))
	t.Layout.StreamBytes = int(binary.LittleEndian.Uint16(b[20:]))
	t.Codebook.Shift = int16(binary.LittleEndian.Uint16(b[22:]))
	t.Codebook.Shape = b[28]
	if b[4] == FormatVersion3 {
		body, tails, err := t.parseHeader3(b)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("codec: parse: %w", err)
		}
		return t, body, tails, nil
	}
	overflowLen = int(binary.LittleEndian.Uint32(b[24:]))
	flags, zeroLevel := b[29], b[30]
	if flags&^(flagPerBlock|flagCompactCodebook|flagDerivedCodebook) != 0 {
		return nil, nil, 0, fmt.Errorf("codec: parse: flags (byte 29) %#x, want bits %#x (capacities per block), %#x (compact codebook) and %#x (derived codebook) only",
			flags, flagPerBlock, flagCompactCodebook, flagDerivedCodebook)
	}
	if flags&flagDerivedCodebook == 0 && zeroLevel != 0 {
		return nil, nil, 0, fmt.Errorf("codec: parse: zero level (byte 30) is %d in a header without a derived codebook, want 0", zeroLevel)
	}
	if b[31] != 0 {
		return nil, nil, 0, fmt.Errorf("codec: parse: reserved byte 31 is %#x, want 0", b[31])
	}
	t.Layout.PerBlock = flags&flagPerBlock != 0
	t.CompactCodebook = flags&flagCompactCodebook != 0
	t.DerivedCodebook = flags&flagDerivedCodebook != 0
	body, err = t.parseCodebook(b[fixedHeaderBytes:], int(zeroLevel))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("codec: parse: %w", err)
	}
	if err := t.Layout.validate(); err != nil {
		return nil, nil, 0, fmt.Errorf("codec: parse: %w", err)
	}
	if err := t.Codebook.validate(t.Layout.FormatVersion()); err != nil {
		return nil, nil, 0, fmt.Errorf("codec: parse: %w", err)
	}
	nb := t.Layout.Blocks(t.N)
	if t.Layout.PerBlock {
		if len(body) < capacityBytes*nb {
			return nil, nil, 0, fmt.Errorf("codec: parse: %d bytes after the codebook, fewer than the %d of %d capacities per block", len(body), capacityBytes*nb, nb)
		}
		t.BlockBytes = make([]uint16, nb)
		for i := range t.BlockBytes {
			t.BlockBytes[i] = binary.LittleEndian.Uint16(body[capacityBytes*i:])
		}
		body = body[capacityBytes*nb:]
		if err := t.checkBlockBytes(); err != nil {
			return nil, nil, 0, fmt.Errorf("codec: parse: %w", err)
		}
	}
	return t, body, overflowLen, nil
}
