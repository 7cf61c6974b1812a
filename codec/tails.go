package codec

// Format version 3 keeps a stream's first 8·C_b bits in its head (the
// block's fixed-capacity stream area) and the rest in its tail: the tail
// lengths are 5-bit fields in units of u = 2^(code−1) bits, one per stream
// (format.md §3).
const (
	tailLenBits    = 5
	tailLenMax     = 1<<tailLenBits - 1
	tailTableBytes = Streams * tailLenBits / 8
	// maxTailUnitCode is the largest unit code: u = 256 bits, which holds
	// any tail (31·256 bits, more than the 4,096 a stream's codes can take).
	maxTailUnitCode = 9
	// maxStreamCodeBits is the most bits one stream's codes take: 256 codes
	// of at most 16 bits (ESC and its literal).
	maxStreamCodeBits = Streams * 2 * MaxCodeLen
)

// tailUnitCode is the code of the smallest unit that holds a tail of max
// bits in 31 units, 0 when there is none.
func tailUnitCode(max int) uint8 {
	if max <= 0 {
		return 0
	}
	c := uint8(1)
	for max > tailLenMax<<(c-1) {
		c++
	}
	return c
}

// tailLen is the tail length field, in units of 2^(code−1) bits, of a
// stream whose codes take x bits in a head of capBits.
func tailLen(x, capBits int, code uint8) int {
	if x <= capBits || code == 0 {
		return 0
	}
	u := 1 << (code - 1)
	return (x - capBits + u - 1) / u
}

// blockTails is a block's tail bookkeeping for head capacity capBits and
// stream bits x: the unit code and the tail region's bits (before padding).
func blockTails(x *[Streams]uint32, capBits int) (code uint8, bits int) {
	mx := 0
	for _, v := range x {
		mx = max(mx, int(v)-capBits)
	}
	code = tailUnitCode(mx)
	if code == 0 {
		return 0, 0
	}
	for _, v := range x {
		bits += tailLen(int(v), capBits, code) << (code - 1)
	}
	return code, bits
}

// blockStoredBytes is the bytes block storage takes besides residues for
// head capacity cbytes: the heads, and with tails the length table and
// the tail region.
func blockStoredBytes(x *[Streams]uint32, cbytes int) int {
	code, bits := blockTails(x, 8*cbytes)
	n := Streams * cbytes
	if code != 0 {
		n += tailTableBytes + (bits+7)/8
	}
	return n
}

// leastBytesV3 is AUTO's C for a block of version 3 whose streams' codes
// take x bits (format.md §4): the C in 2..512 that stores the block in the
// fewest bytes, heads, length table and tails (ties: the smaller C).
//
// Every C is tried. With the streams' bits sorted, a C's tails are those
// of the streams above its head; for units of at most 8 bits (which divide
// a head's 8·C_b) a stream's tail rounded to the unit is its bits rounded
// to the unit less the head, so suffix sums of the rounded bits give the
// tails at once. Larger units are summed stream by stream, only where the
// tails unrounded leave the C a chance.
func leastBytesV3(x *[Streams]uint32, l Layout, n, b int) int {
	sorted := sortedStreamBits(x)
	// suffix[c][i]: Σ_{i' ≥ i} sorted[i'] rounded up to 2^(c−1), c = 1..4.
	var suffix [5][Streams + 1]int
	// Bits are not negative: rounding to a unit is shifts, not divisions.
	for c := 1; c <= 4; c++ {
		sh := uint(c - 1)
		u := 1 << sh
		for i := Streams - 1; i >= 0; i-- {
			suffix[c][i] = suffix[c][i+1] + (sorted[i]+u-1)>>sh<<sh
		}
	}
	top := sorted[Streams-1]
	// From the smallest C without tails down, so that the C of small units
	// come first and bound the rest (ties go to the smaller C).
	hi := autoMinStreamBytes
	for hi < autoMaxStreamBytes && 8*l.scaledStreamBytes(n, b, hi) < top {
		hi++
	}
	best, bestBytes := 0, 0
	i := Streams // the first stream above the head
	for c := hi; c >= autoMinStreamBytes; c-- {
		cbytes := l.scaledStreamBytes(n, b, c)
		capBits := 8 * cbytes
		bytes := Streams * cbytes
		if top > capBits {
			for i > 0 && sorted[i-1] > capBits {
				i--
			}
			code := tailUnitCode(top - capBits)
			bits := 0
			if code <= 4 {
				bits = suffix[code][i] - capBits*(Streams-i)
			} else {
				// A lower bound: the tails rounded to bytes (a unit is whole
				// bytes, and a head ends on one), and at least a unit each.
				sh := uint(code - 1)
				bits = max(suffix[4][i]-capBits*(Streams-i), (Streams-i)<<sh)
				if best != 0 && bytes+tailTableBytes+(bits+7)/8 > bestBytes {
					continue
				}
				bits = roundedTailBits(sorted[i:], capBits, sh)
			}
			bytes += tailTableBytes + (bits+7)/8
		}
		if best == 0 || bytes <= bestBytes {
			best, bestBytes = c, bytes
		}
	}
	return best
}

// roundedTailBits is the tail bits of streams of bits above, each over a
// head of capBits, rounded up to units of 2^sh bits: its own function, so
// that the loop keeps its few values in registers.
func roundedTailBits(above []int, capBits int, sh uint) int {
	round := capBits - (1<<sh - 1)
	bits := 0
	for _, v := range above {
		bits += (v - round) >> sh
	}
	return bits << sh
}
