package codec

import "fmt"

// BlockCapacities is AUTO's C for each block of src (format.md §4): the rule
// that ChooseLayout applies to the tensor's sample, applied to each block's
// own sample (§2's sample of the block's elements) under the tensor's codebook.
func BlockCapacities(cb *Codebook, l Layout, src []uint16) []uint16 {
	return blockCapacities(nil, cb, l, src)
}

// blockCapacities is BlockCapacities into dst's array where it is large enough.
func blockCapacities(dst []uint16, cb *Codebook, l Layout, src []uint16) []uint16 {
	caps := resize(dst, l.Blocks(len(src)))
	for b := range caps {
		lo := b * l.BlockSize
		h := SampleHistogram(src[lo:min(lo+l.BlockSize, len(src))])
		caps[b] = uint16(autoStreamBytes(cb, &h))
	}
	return caps
}

// ChooseBlockLayout returns l with capacities per block when l is AUTO in
// format version 2 and BlockCapacities differ between src's blocks (the
// largest then becomes StreamBytes); otherwise l, whose one C serves every
// block at no cost per block.
func ChooseBlockLayout(l Layout, cb *Codebook, src []uint16) Layout {
	if l.Preset != Auto || l.Version1 || l.Blocks(len(src)) < 2 {
		return l
	}
	caps := BlockCapacities(cb, l, src)
	largest := maxCapacity(caps)
	for _, c := range caps {
		if int(c) != largest {
			l.PerBlock, l.StreamBytes = true, largest
			return l
		}
	}
	return l
}

func maxCapacity(caps []uint16) int {
	m := 0
	for _, c := range caps {
		m = max(m, int(c))
	}
	return m
}

// blockCapacity is block b's full-block C: its own with capacities per
// block, else (or where a tensor not yet checked lacks it) the layout's.
func (t *Tensor) blockCapacity(b int) int {
	if t.Layout.PerBlock && b < len(t.BlockBytes) {
		return int(t.BlockBytes[b])
	}
	return t.Layout.StreamBytes
}

// BlockStreamBytes is C_b, the bytes per stream of block b (format.md §3).
func (t *Tensor) BlockStreamBytes(b int) int {
	if b < 0 || b >= t.Layout.Blocks(t.N) {
		return 0
	}
	return t.Layout.scaledStreamBytes(t.N, b, t.blockCapacity(b))
}

// StreamAreaStart is where block b's stream area starts in Streams:
// Σ_{b' < b} 256·C_b'. b = Blocks(N) gives the whole area's length.
func (t *Tensor) StreamAreaStart(b int) int {
	if !t.Layout.PerBlock {
		if b >= t.Layout.Blocks(t.N) {
			return t.Layout.StreamAreaBytes(t.N)
		}
		return b * Streams * t.Layout.StreamBytes
	}
	start := 0
	for k := range b {
		start += Streams * t.BlockStreamBytes(k)
	}
	return start
}

// StreamAreaBytes is Σ_b 256·C_b, the bytes of every block's stream area.
func (t *Tensor) StreamAreaBytes() int { return t.StreamAreaStart(t.Layout.Blocks(t.N)) }

// areaStarts fills dst with StreamAreaStart(b) for b = 0..Blocks(N).
func (t *Tensor) areaStarts(dst []int) []int {
	nb := t.Layout.Blocks(t.N)
	dst = resize(dst, nb+1)
	dst[0] = 0
	for b := range nb {
		dst[b+1] = dst[b] + Streams*t.BlockStreamBytes(b)
	}
	return dst
}

// CheckBlockBytes checks t.BlockBytes against t.N and t.Layout, as decoding
// does (for a device that lays out a tensor's blocks itself).
func (t *Tensor) CheckBlockBytes() error {
	if err := t.checkBlockBytes(); err != nil {
		return fmt.Errorf("codec: %w", err)
	}
	return nil
}

// checkBlockBytes checks the capacities per block against the layout: one
// per block, each in AUTO's range, the largest equal to the header's C; none
// without PerBlock.
func (t *Tensor) checkBlockBytes() error {
	if !t.Layout.PerBlock {
		if len(t.BlockBytes) != 0 {
			return fmt.Errorf("%d capacities per block for a layout of one capacity", len(t.BlockBytes))
		}
		return nil
	}
	nb := t.Layout.Blocks(t.N)
	if nb == 0 {
		return fmt.Errorf("capacities per block for an empty tensor")
	}
	if len(t.BlockBytes) != nb {
		return fmt.Errorf("%d capacities per block, want %d", len(t.BlockBytes), nb)
	}
	for b, c := range t.BlockBytes {
		if c < autoMinStreamBytes || c > autoMaxStreamBytes {
			return fmt.Errorf("block %d: stream capacity %d bytes out of range %d..%d", b, c, autoMinStreamBytes, autoMaxStreamBytes)
		}
	}
	if m := maxCapacity(t.BlockBytes); m != t.Layout.StreamBytes {
		return fmt.Errorf("largest capacity per block is %d bytes, the header's C is %d", m, t.Layout.StreamBytes)
	}
	return nil
}
