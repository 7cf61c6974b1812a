package trainer

import "math/bits"

// The codec deals element i of a block to stream i mod 256. In a row-major
// matrix whose row length divides 256 or is a multiple of it, that puts one
// column (one channel, one input feature) in each stream, and columns differ
// in scale: streams of large columns overflow while the others leave
// capacity unused (on this trainer's tensors, 3–8% of exponents spilled with
// AUTO's 1% target). So the LCT run stores each chunk scrambled: within the
// g-th group of 256 values, value a and value a ^ scrambleKey(g) trade
// places. Every stream then draws from many columns, and spill falls back
// to about the target.
//
// The swap is an involution, done in place, so the same call scrambles
// before encoding and unscrambles after decoding; a chunk's values, encoded
// or kept raw, are always held scrambled.

// scrambleKey is the XOR mask of group g: the top byte of a multiplicative
// hash (Knuth's 2654435761), 0 for group 0.
func scrambleKey(g int) int { return int(uint32(g)*2654435761) >> 24 }

// scramble swaps, in each full group of 256 values, value a with value
// a ^ scrambleKey(group); a partial last group stays as it is.
func scramble(v []uint16) {
	for g := 0; (g+1)*256 <= len(v); g++ {
		key := scrambleKey(g)
		if key == 0 {
			continue
		}
		row := (*[256]uint16)(v[g*256 : (g+1)*256])
		// Pair each a whose bit hb (key's top bit) is clear with a ^ key,
		// which has it set: every pair once, without a branch.
		hb := 1 << (bits.Len(uint(key)) - 1)
		for base := 0; base < 256; base += 2 * hb {
			for a := base; a < base+hb; a++ {
				b := a ^ key
				row[a], row[b] = row[b], row[a]
			}
		}
	}
}
