package codec

import (
	"encoding/binary"
	"fmt"
)

// tensorMagic opens a serialised tensor (format.md §5); the version byte
// after it is the layout's FormatVersion.
const tensorMagic = "LCTt"

// AppendBinary appends the serialisation of t (format.md §5) to b.
func (t *Tensor) AppendBinary(b []byte) ([]byte, error) {
	if err := t.checkStructure(); err != nil {
		return b, fmt.Errorf("codec: marshal: %w", err)
	}
	var h [headerBytes]byte
	copy(h[0:4], tensorMagic)
	h[4] = byte(t.Layout.FormatVersion())
	h[5] = byte(t.Layout.Preset)
	h[6] = byte(t.Codebook.Dist)
	h[7] = t.Codebook.EscLen
	binary.LittleEndian.PutUint64(h[8:], uint64(t.N))
	binary.LittleEndian.PutUint32(h[16:], uint32(t.Layout.BlockSize))
	binary.LittleEndian.PutUint16(h[20:], uint16(t.Layout.StreamBytes))
	binary.LittleEndian.PutUint16(h[22:], uint16(t.Codebook.Shift))
	binary.LittleEndian.PutUint32(h[24:], uint32(len(t.Overflow)))
	h[28] = t.Codebook.Shape
	for k := range 128 {
		h[32+k] = t.Codebook.Lengths[2*k] | t.Codebook.Lengths[2*k+1]<<4
	}
	b = append(b, h[:]...)
	b = append(b, t.SF...)
	b = append(b, t.Streams...)
	b = append(b, t.Bitmaps...)
	for _, o := range t.Offsets {
		b = binary.LittleEndian.AppendUint32(b, o)
	}
	return append(b, t.Overflow...), nil
}

// MarshalBinary returns the serialisation of t; its length is t.StoredBytes().
func (t *Tensor) MarshalBinary() ([]byte, error) {
	return t.AppendBinary(make([]byte, 0, t.StoredBytes()))
}

// ParseTensor reads a serialised tensor, checking every field, the total
// length and the overflow bookkeeping; stream bits are checked when decoding.
// The tensor's sections are copies: b may be reused afterwards.
func ParseTensor(b []byte) (*Tensor, error) {
	if len(b) < headerBytes {
		return nil, fmt.Errorf("codec: parse: %d bytes, shorter than the %d-byte header", len(b), headerBytes)
	}
	if string(b[0:4]) != tensorMagic {
		return nil, fmt.Errorf("codec: parse: magic %q, want %q", b[0:4], tensorMagic)
	}
	t := &Tensor{}
	switch b[4] {
	case FormatVersion1:
		t.Layout.Version1 = true
	case FormatVersion2:
	default:
		return nil, fmt.Errorf("codec: parse: version %d, want %d or %d", b[4], FormatVersion1, FormatVersion2)
	}
	if p := Preset(b[5]); !p.valid() {
		return nil, fmt.Errorf("codec: parse: preset %d out of range 0..3", b[5])
	} else {
		t.Layout.Preset = p
	}
	if d := Distribution(b[6]); !d.valid() {
		return nil, fmt.Errorf("codec: parse: distribution %d out of range 0..3", b[6])
	} else {
		t.Codebook.Dist = d
	}
	t.Codebook.EscLen = b[7]
	n := binary.LittleEndian.Uint64(b[8:])
	if n > MaxElements {
		return nil, fmt.Errorf("codec: parse: N = %d above %d", n, MaxElements)
	}
	t.N = int(n)
	t.Layout.BlockSize = int(binary.LittleEndian.Uint32(b[16:]))
	t.Layout.StreamBytes = int(binary.LittleEndian.Uint16(b[20:]))
	t.Codebook.Shift = int16(binary.LittleEndian.Uint16(b[22:]))
	overflowLen := int(binary.LittleEndian.Uint32(b[24:]))
	t.Codebook.Shape = b[28]
	if r := b[29:32]; r[0]|r[1]|r[2] != 0 {
		return nil, fmt.Errorf("codec: parse: reserved bytes 29..31 are %#x, want 0", r)
	}
	for k := range 128 {
		t.Codebook.Lengths[2*k] = b[32+k] & 0x0F
		t.Codebook.Lengths[2*k+1] = b[32+k] >> 4
	}
	if err := t.Layout.validate(); err != nil {
		return nil, fmt.Errorf("codec: parse: %w", err)
	}
	if err := t.Codebook.validate(t.Layout.FormatVersion()); err != nil {
		return nil, fmt.Errorf("codec: parse: %w", err)
	}
	nb := t.Layout.Blocks(t.N)
	area := t.Layout.StreamAreaBytes(t.N)
	want := headerBytes + t.N + area + nb*(bitmapBytes+offsetBytes) + overflowLen
	if len(b) != want {
		return nil, fmt.Errorf("codec: parse: %d bytes, the header implies %d", len(b), want)
	}
	// One copy holds every byte section; capacities are capped so that
	// reusing one section (an Encoder writing into t) cannot clobber the next.
	body := append([]byte(nil), b[headerBytes:]...)
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
