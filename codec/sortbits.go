package codec

import "slices"

// sortBitsRadix is the digit of sortedStreamBits' counting passes: two of
// them cover a stream's bits (at most maxStreamCodeBits).
const sortBitsRadix = 7

// sortedStreamBits is x ascending: two stable counting passes of 7 bits,
// which beat a comparison sort on 256 small values; values too large for
// them (not a stream's bits) fall back to slices.Sort.
func sortedStreamBits(x *[Streams]uint32) [Streams]int {
	var sorted, tmp [Streams]int
	var lo, hi [1 << sortBitsRadix]uint16
	const mask = 1<<sortBitsRadix - 1
	for j, v := range x {
		if v >= 1<<(2*sortBitsRadix) {
			for j, v := range x {
				sorted[j] = int(v)
			}
			slices.Sort(sorted[:])
			return sorted
		}
		tmp[j] = int(v)
		lo[v&mask]++
		hi[v>>sortBitsRadix&mask]++
	}
	loAt, hiAt := uint16(0), uint16(0)
	for d := range lo {
		loAt, lo[d] = loAt+lo[d], loAt
		hiAt, hi[d] = hiAt+hi[d], hiAt
	}
	var mid [Streams]int
	for _, v := range tmp {
		d := v & mask
		mid[lo[d]&(Streams-1)] = v
		lo[d]++
	}
	for _, v := range mid {
		d := v >> sortBitsRadix & mask
		sorted[hi[d]&(Streams-1)] = v
		hi[d]++
	}
	return sorted
}
