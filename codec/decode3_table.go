package codec

// The version 3 decoder looks up the next lookBits bits of a stream in a
// table whose entry gives up to three symbols (codes are at most 8 bits,
// and short ones often come three to a lookup), each already shifted to
// its place in the value (symbol << (7 − k)), so that a lookup's symbols
// go straight to the block's staging rows.
const (
	lookBits = 11

	// An entry: up to three values of 16 bits (bits 0–47), then the bits
	// the lookup consumes, its symbol count, and flags.
	entBitsShift  = 48 // 5 bits: bits consumed (an ESC's include its literal)
	entCountShift = 53 // 2 bits: symbols (1 for an ESC)
	entEsc        = 1 << 55
	entInvalid    = 1 << 56
	entLenShift   = 57 // 4 bits: the first code's length (an ESC's, for its literal)
)

// lookEntry is a lookup table entry.
type lookEntry = uint64

// lookTable fills t (2^lookBits entries) for codebook cb, whose values'
// symbols sit shift bits up; codes is scratch.
func lookTable(t []lookEntry, cb *Codebook, codes *[]uint16, shift uint) []lookEntry {
	c := cb.symCode()
	var esc [1 << MaxSplit]uint16
	*codes, esc = c.codes(*codes)
	dt := c.decodeTable(*codes, esc)
	k := uint(cb.Split)
	t = resize(t, 1<<lookBits)
	const window = 1<<lookBits - 1
	for x := range t {
		first := dt[x>>(lookBits-MaxCodeLen)]
		l1 := uint(first.length())
		switch {
		case l1 == 0:
			t[x] = entInvalid
			continue
		case uint32(first)&symEsc != 0:
			// ESC s<<k | t: the value's sign and fraction bits; its
			// exponent is the literal after the code.
			e := uint64(first) & 0xFF
			v := e>>k<<15 | (e&(1<<k-1))<<(7-k)
			t[x] = v | uint64(l1+literalBits)<<entBitsShift | 1<<entCountShift | entEsc | uint64(l1)<<entLenShift
			continue
		}
		ent := uint64(uint16(uint32(first)&0x7FF)<<shift) | uint64(l1)<<entLenShift
		used, n := l1, uint(1)
		for n < 3 {
			next := dt[(x<<used)&window>>(lookBits-MaxCodeLen)]
			l := uint(next.length())
			if l == 0 || used+l > lookBits || uint32(next)&symEsc != 0 {
				break
			}
			ent |= uint64(uint16(uint32(next)&0x7FF)<<shift) << (16 * n)
			used += l
			n++
		}
		t[x] = ent | uint64(used)<<entBitsShift | uint64(n)<<entCountShift
	}
	return t
}

// residueTable fills t: for each residue r of w bits under split k and sign
// s, the value bits it gives (the low fraction bits and the sign).
func residueTable(t *[256]uint16, k, w uint, s Sign) {
	var sign uint16
	if s == SignMinus {
		sign = 0x8000
	}
	low := uint16(1)<<(7-k) - 1
	var signBit uint16
	if w == 8-k {
		signBit = 1 << (7 - k)
	}
	for r := range t {
		v := uint16(r) & (1<<w - 1)
		t[r] = v&low | (v&signBit)<<(8+k) | sign
	}
}
