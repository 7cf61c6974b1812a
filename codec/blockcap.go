package codec

import "fmt"

// BlockCapacities is AUTO's C for each block of src under cb (format.md
// §4): the C that stores the block in the fewest bytes, its stream area and
// its overflow region, each stream's codes counted exactly (ties: the
// smaller C).
func BlockCapacities(cb *Codebook, l Layout, src []uint16) []uint16 {
	var c capacitySearch
	var ps parallelState
	return c.run(&ps, 1, cb, l, src)
}

// capacityScratch is the capacity search's bookkeeping: each stream's bits
// so far, and how many code ends and stream ends fall at each bit count.
type capacityScratch struct {
	acc    [Streams]uint16
	ends   [maxStreamBits + 1]uint32 // codes whose stream holds this many bits once they are in
	totals [maxStreamBits + 1]uint32 // streams of this many bits in all
}

// maxStreamBits is the most bits a stream's codes take: 256 of 16 bits, which
// is also the most a stream holds (512 bytes).
const maxStreamBits = Streams * 2 * MaxCodeLen

// capacitySearch runs the capacity search block by block on an Encoder's
// workers, each with its own scratch; blocks are independent.
type capacitySearch struct {
	scratch []capacityScratch
	cost    [256]uint16
	layout  Layout
	src     []uint16
	caps    []uint16
}

// run returns AUTO's C for each block of src under cb (BlockCapacities),
// searched on workers workers (0: GOMAXPROCS), in a slice reused by the
// next run.
func (c *capacitySearch) run(ps *parallelState, workers int, cb *Codebook, l Layout, src []uint16) []uint16 {
	nb := l.Blocks(len(src))
	c.caps = resize(c.caps, nb)
	w := workerCount(workers, nb)
	if len(c.scratch) < w {
		c.scratch = append(c.scratch, make([]capacityScratch, w-len(c.scratch))...)
	}
	for e := range c.cost {
		c.cost[e] = uint16(cb.Cost(byte(e)))
	}
	c.layout, c.src = l, src
	ps.runBlocks(c, w, nb)
	c.src = nil
	return c.caps
}

func (c *capacitySearch) runBlock(worker, b int) {
	c.caps[b] = uint16(c.scratch[worker].leastBytes(&c.cost, c.layout, c.src, b))
}

// leastBytes is the C that stores block b of src in the fewest bytes. A
// stream of capacity 8·C_b bits codes its first k exponents where the first
// k codes take at most that many bits (codes go in while they fit, and each
// takes at least one bit), so with ends[x] the codes that end a stream's
// first x bits, the block codes Σ_{x ≤ 8·C_b} ends[x] exponents and spills
// the rest; the streams whose codes take more than 8·C_b bits in all spill,
// a marker byte each.
func (s *capacityScratch) leastBytes(cost *[256]uint16, l Layout, src []uint16, b int) int {
	n := len(src)
	nb := l.blockLen(n, b)
	block := src[b*l.BlockSize:][:nb]
	clear(s.acc[:])
	clear(s.ends[:])
	clear(s.totals[:])
	skew := 1 // version 2 turns row p's element j to stream (j + p) mod 256
	if l.v1() {
		skew = 0
	}
	for base := 0; base < nb; base += Streams {
		turn := (base / Streams) * skew
		for c, v := range block[base:min(base+Streams, nb)] {
			j := (c + turn) & (Streams - 1)
			a := s.acc[j] + cost[byte(v>>7)]
			s.acc[j] = a
			s.ends[a]++
		}
	}
	for _, a := range s.acc {
		s.totals[a]++
	}
	best, bestBytes := 0, 0
	coded, fitting, x := 0, 0, 0 // codes and streams within x bits
	for c := autoMinStreamBytes; c <= autoMaxStreamBytes; c++ {
		cbytes := l.scaledStreamBytes(n, b, c)
		for ; x <= 8*cbytes; x++ {
			coded += int(s.ends[x])
			fitting += int(s.totals[x])
		}
		bytes := Streams*cbytes + (nb - coded) + (Streams - fitting)
		if best == 0 || bytes < bestBytes {
			best, bestBytes = c, bytes
		}
		if fitting == Streams {
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
	if l.Preset != Auto || l.v1() || len(src) == 0 {
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

// DropEqualCapacities gives a tensor encoded with capacities per block,
// whose blocks all got the same C, that one C and no table, as
// ChooseBlockLayout would have laid it out: the streams are where they
// were, only the header changes. Other tensors are left as they are.
func (t *Tensor) DropEqualCapacities() {
	if !t.Layout.PerBlock {
		return
	}
	for _, c := range t.BlockBytes {
		if int(c) != t.Layout.StreamBytes {
			return
		}
	}
	t.Layout.PerBlock = false
	t.BlockBytes = nil
	t.Stats.setStoredBytes(t)
}

// PerBlockLayout is l with capacities per block where AUTO in format
// version 2 codes n values so: the encoder then chooses each block's C
// (once), and DropEqualCapacities afterwards gives what ChooseBlockLayout
// would have laid out.
func PerBlockLayout(l Layout, n int) Layout {
	if l.Preset == Auto && !l.v1() && n > 0 {
		l.PerBlock = true
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
