package codec

import "fmt"

// BlockCapacities is AUTO's C for each block of src under cb (format.md
// §4): the C that stores the block in the fewest bytes, its stream area and
// its overflow region, each stream's codes counted exactly (ties: the
// smaller C).
func BlockCapacities(cb *Codebook, l Layout, src []uint16) []uint16 {
	var s capacityScratch
	return s.capacities(nil, cb, l, src)
}

// capacityScratch is the per-stream bookkeeping of the capacity search.
type capacityScratch struct {
	prefix []uint16 // per stream, 257 entries: bits of its first k codes
	coded  [Streams]int
	count  [Streams]int
}

// capacities is BlockCapacities into dst's array where it is large enough.
func (s *capacityScratch) capacities(dst []uint16, cb *Codebook, l Layout, src []uint16) []uint16 {
	caps := resize(dst, l.Blocks(len(src)))
	var cost [256]uint16
	for e := range cost {
		cost[e] = uint16(cb.Cost(byte(e)))
	}
	for b := range caps {
		caps[b] = uint16(s.leastBytes(&cost, l, src, b))
	}
	return caps
}

// leastBytes is the C that stores block b of src in the fewest bytes.
func (s *capacityScratch) leastBytes(cost *[256]uint16, l Layout, src []uint16, b int) int {
	n := len(src)
	nb := l.blockLen(n, b)
	block := src[b*l.BlockSize:][:nb]
	const row = Streams + 1 // at most 256 positions a stream
	s.prefix = resize(s.prefix, Streams*row)
	longest := 0 // the bits of the longest stream: no C above ⌈longest/8⌉ helps
	for j := range Streams {
		s.count[j] = l.StreamCount(nb, j)
		s.coded[j] = 0
		pre := s.prefix[j*row : j*row+s.count[j]+1]
		pre[0] = 0
		for p := range s.count[j] {
			pre[p+1] = pre[p] + cost[byte(block[l.Element(j, p)]>>7)]
		}
		longest = max(longest, int(pre[s.count[j]]))
	}
	best, bestBytes := 0, 0
	for c := autoMinStreamBytes; c <= autoMaxStreamBytes; c++ {
		cbytes := l.scaledStreamBytes(n, b, c)
		capBits := uint16(8 * cbytes)
		bytes := Streams * cbytes
		for j := range Streams {
			pre := s.prefix[j*row : j*row+s.count[j]+1]
			k := s.coded[j]
			for k < s.count[j] && pre[k+1] <= capBits {
				k++
			}
			s.coded[j] = k
			if spill := s.count[j] - k; spill > 0 {
				bytes += 1 + spill
			}
		}
		if best == 0 || bytes < bestBytes {
			best, bestBytes = c, bytes
		}
		if 8*cbytes >= longest {
			break // nothing spills: a larger C only adds bytes
		}
	}
	return best
}

// ChooseBlockLayout is AUTO's layout in format version 2 for src under cb
// (format.md §4): BlockCapacities, as one C where every block gets the same
// (no table), else with PerBlock and the largest as StreamBytes. Other
// layouts, and an empty tensor's, come back as they are.
func ChooseBlockLayout(l Layout, cb *Codebook, src []uint16) Layout {
	if l.Preset != Auto || l.Version1 || len(src) == 0 {
		return l
	}
	caps := BlockCapacities(cb, l, src)
	l.StreamBytes = maxCapacity(caps)
	for _, c := range caps {
		if int(c) != l.StreamBytes {
			l.PerBlock = true
			return l
		}
	}
	l.PerBlock = false
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
