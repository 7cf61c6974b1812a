package codec

// Per-block side data: the spill bitmap and the overflow offset.
const (
	bitmapBytes = Streams / 8
	offsetBytes = 4
	// capacityBytes is a block's C in a tensor with capacities per block.
	capacityBytes = 2
)

// Tensor is one encoded tensor with its sections kept apart, as the GPU keeps
// them in separate device buffers.
type Tensor struct {
	N        int
	Layout   Layout
	Codebook Codebook
	// CompactCodebook: the header stores the codebook as its coded range
	// (CompactCodebook says when the encoder does so).
	CompactCodebook bool
	// DerivedCodebook: the header stores no lengths, the family table its
	// fields name gives them (DerivedCodebook says when the encoder does so).
	DerivedCodebook bool
	// SF holds the values' bits that are not coded: in versions 1 and 2 the
	// N sign-fraction bytes, in version 3 the residues, ResidueBits each,
	// packed (format.md §1), both in element order.
	SF []byte
	// BlockBytes is each block's full-block C when Layout.PerBlock, else nil.
	BlockBytes []uint16
	Streams    []byte   // StreamAreaBytes(): every block's interleaved stream area (version 3: the heads)
	Bitmaps    []byte   // versions 1, 2: 32 per block, bit j%8 of byte j/8 set when stream j spills
	Offsets    []uint32 // versions 1, 2: per block, start of its overflow region
	// Overflow in versions 1 and 2: per block, one marker per spilling
	// stream, then the spilled exponents. In version 3 the tail area: per
	// block with tails, every stream's tail bits in stream order, padded to
	// a byte.
	Overflow []byte
	// Version 3: TailUnits[b] is 0 when no stream of block b has a tail,
	// else log2 of its tail unit, plus 1; TailLens holds, for every block,
	// 256 tail lengths of 5 bits in units (160 bytes, zero where the block
	// has no tails; the serialisation keeps only those of blocks with
	// tails). Where some block has a codebook of its own
	// (Layout.BlockCodebooks), BlockCodebooks holds one entry per block:
	// its own, or the zero Codebook where it uses the tensor's.
	TailUnits      []byte
	TailLens       []byte
	BlockCodebooks []Codebook
	Stats          Stats // filled by encoding; zero after parsing until ComputeStats
}

// StoredBytes is the length of the tensor's serialisation, everything counted.
func (t *Tensor) StoredBytes() int {
	nb := t.Layout.Blocks(t.N)
	if t.Layout.v3() {
		return t.v3Bytes()
	}
	return t.HeaderBytes() + capacityBytes*len(t.BlockBytes) + t.N + t.StreamAreaBytes() + nb*(bitmapBytes+offsetBytes) + len(t.Overflow)
}

// spills reports whether stream j of block b spills, per the bitmap.
func (t *Tensor) spills(b, j int) bool {
	return t.Bitmaps[b*bitmapBytes+j/8]>>(j%8)&1 != 0
}

// overflowEnd is the end of block b's overflow region.
func (t *Tensor) overflowEnd(b int) int {
	if b+1 < len(t.Offsets) {
		return int(t.Offsets[b+1])
	}
	return len(t.Overflow)
}
