package codec

// The version 3 decoder looks up the next lookBits bits of a stream in a
// table whose entry gives up to three symbols (codes are at most 8 bits,
// and short ones often come three to a lookup), each already shifted to
// its place in the value (symbol << (7 − k)), so that a lookup's symbols
// go straight to the block's staging rows.
const (
	lookBits = 10

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
// symbols sit shift bits up.
func lookTable(t []lookEntry, cb *Codebook, shift uint) []lookEntry {
	c := cb.symCode()
	f := lookFiller{t: resize(t, 1<<lookBits), shift: shift}
	f.dt = canonicalTable(&c)
	k := uint(cb.Split)
	// The first code: each one's entries are a run of the table.
	for x := 0; x < 1<<lookBits; {
		first := f.dt[x>>(lookBits-MaxCodeLen)]
		l1 := uint(first.length())
		switch {
		case l1 == 0:
			n := 1 << (lookBits - MaxCodeLen)
			fillEntries(f.t[x:x+n], entInvalid)
			x += n
		case uint32(first)&symEsc != 0:
			// ESC s<<k | t: the value's sign and fraction bits; its
			// exponent is the literal after the code.
			e := uint64(first) & 0xFF
			v := e>>k<<15 | (e&(1<<k-1))<<(7-k)
			n := 1 << (lookBits - l1)
			fillEntries(f.t[x:x+n], v<<entValues|uint64(l1+literalBits)<<entBitsShift|1|entEsc|uint64(l1)<<entLenShift)
			x += n
		default:
			f.fill(x, lookBits-l1, f.value(first, 0)|uint64(l1)<<entLenShift, 1, l1)
			x += 1 << (lookBits - l1)
		}
	}
	return f.t
}

// canonicalTable is c's decode table by the next 8 bits (as
// c.decodeTable of c.codes), in one pass over the symbols: canonical codes
// of one length go in number order (the ESCs after the symbols), each
// length's first code following from the counts of the shorter ones.
func canonicalTable(c *symCode) (t [256]symEntry) {
	var count [MaxCodeLen + 1]uint16
	for _, l := range c.lens {
		count[l]++
	}
	for x := range c.escapes() {
		count[c.esc[x]]++
	}
	var next [MaxCodeLen + 1]uint16
	for l := 2; l <= MaxCodeLen; l++ {
		next[l] = (next[l-1] + count[l-1]) << 1
	}
	fill := func(v uint32, l uint8) {
		lo := int(next[l]) << (MaxCodeLen - l)
		next[l]++
		hi := min(int(next[l])<<(MaxCodeLen-l), len(t))
		for i := lo; i < hi; i++ {
			t[i] = symEntry(v | uint32(l)<<16)
		}
	}
	for s, l := range c.lens {
		if l != 0 {
			fill(uint32(s), l)
		}
	}
	for x := range c.escapes() {
		if l := c.esc[x]; l != 0 {
			fill(uint32(x)|symEsc, l)
		}
	}
	return t
}

// lookFiller fills a lookup table a run of entries at a time: the entries
// whose bits start with the same codes share their symbols.
type lookFiller struct {
	t     []lookEntry
	dt    [256]symEntry
	shift uint
}

// value is the entry bits of symbol entry s as value i of a lookup.
func (f *lookFiller) value(s symEntry, i int) lookEntry {
	return lookEntry(uint16(uint32(s)&0x7FF)<<f.shift) << (entValues + 16*i)
}

// fill fills the 2^r entries from x, whose first n codes (used bits in
// all, their values in ent) leave r bits: a further code where one fits in
// them, else the entry as it stands.
func (f *lookFiller) fill(x int, r uint, ent lookEntry, n int, used uint) {
	if n == 3 || r == 0 {
		fillEntries(f.t[x:x+1<<r], ent|lookEntry(used)<<entBitsShift|lookEntry(n))
		return
	}
	for y := 0; y < 1<<r; {
		// The next code's first 8 bits: the r bits left, then 0s.
		var next symEntry
		span := 1 // the entries this code, or its absence, covers
		if r >= MaxCodeLen {
			next = f.dt[y>>(r-MaxCodeLen)]
			span = 1 << (r - MaxCodeLen)
		} else {
			next = f.dt[y<<(MaxCodeLen-r)]
		}
		l := uint(next.length())
		if l == 0 || l > r || uint32(next)&symEsc != 0 {
			fillEntries(f.t[x+y:x+y+span], ent|lookEntry(used)<<entBitsShift|lookEntry(n))
			y += span
			continue
		}
		f.fill(x+y, r-l, ent|f.value(next, n), n+1, used+l)
		y += 1 << (r - l)
	}
}

// fillEntries sets every entry of t to e.
func fillEntries(t []lookEntry, e lookEntry) {
	for i := range t {
		t[i] = e
	}
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
