package codec

// The version 3 decoder looks up the next lookBits bits of a stream in a
// table whose entry gives up to three symbols (codes are at most 8 bits,
// and short ones often come three to a lookup), each already shifted to
// its place in the value (symbol << (7 − k)), so that a lookup's symbols
// go straight to the block's staging rows.
const (
	lookBits = 11

	// An entry: its symbol count (bits 0–1), flags, the first code's
	// length (an ESC's, for its literal), the bits the lookup consumes (an
	// ESC's include its literal), then up to three values of 16 bits. The
	// count and bits sit where, the entry masked by entAdvance and moved up
	// 8 bits, they advance a stream's state (decodeFast).
	entEsc       = 1 << 2
	entInvalid   = 1 << 3
	entLenShift  = 4 // 4 bits
	entBitsShift = 9 // 5 bits
	entAdvance   = 31<<entBitsShift | 3
	entValues    = 16
)

// lookEntry is a lookup table entry.
type lookEntry = uint64

// entValue is value i of entry e.
func entValue(e lookEntry, i int) uint16 { return uint16(e >> (entValues + 16*i)) }

// entCount is the symbols of entry e.
func entCount(e lookEntry) int { return int(e & 3) }

// entBits is the bits entry e consumes.
func entBits(e lookEntry) uint { return uint(e >> entBitsShift & 31) }

// entLen is the length of entry e's first code.
func entLen(e lookEntry) uint { return uint(e >> entLenShift & 15) }

// withLiteral is ESC entry e with its value's exponent, the literal after
// its code in wd (the stream's next 64 bits).
func withLiteral(e lookEntry, wd uint64) lookEntry {
	return e | (wd<<entLen(e)>>56)<<(entValues+7)
}

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
			t[x] = v<<entValues | uint64(l1+literalBits)<<entBitsShift | 1 | entEsc | uint64(l1)<<entLenShift
			continue
		}
		ent := uint64(uint16(uint32(first)&0x7FF)<<shift)<<entValues | uint64(l1)<<entLenShift
		used, n := l1, uint(1)
		for n < 3 {
			next := dt[(x<<used)&window>>(lookBits-MaxCodeLen)]
			l := uint(next.length())
			if l == 0 || used+l > lookBits || uint32(next)&symEsc != 0 {
				break
			}
			ent |= uint64(uint16(uint32(next)&0x7FF)<<shift) << (entValues + 16*n)
			used += l
			n++
		}
		t[x] = ent | uint64(used)<<entBitsShift | uint64(n)
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
