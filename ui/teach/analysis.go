// Package teach is the teaching view: it follows one real value of the
// selected tensor through the codec, from its 16 bits to the stream it is
// coded into, and shows how full the block's 256 streams are.
//
// Everything shown is computed with the codec's API on the block of values
// the trainer hands over (session.TensorDetail): the codebook's codes and
// costs, the layout's capacity, and an encoding of the block whose stored
// bytes the view reads back, so what the view explains is what the codec
// wrote.
package teach

import (
	"fmt"
	"math"

	"lcttop/codec"
	"lcttop/session"
)

// Analysis is one block walked through the codec.
type Analysis struct {
	Detail      session.TensorDetail
	N           int // values in the block
	StreamBytes int // C_b, bytes per stream of this block
	Codes       [256]uint16
	Esc         uint16

	Count    [codec.Streams]int // exponents per stream
	Coded    [codec.Streams]int // exponents coded in the stream (version 3: in its head)
	FillBits [codec.Streams]int // bits written per stream
	start    []int32            // per element: first bit in its stream, -1 if spilled

	SpillingStreams int
	Spilled         int // spilled exponents in the block (version 3: codes that end in a tail)
	Escaped         int // escaped exponents in the block

	// Version 3 (format.md §7): every code is in its stream, the first
	// CapacityBits in the head, the rest in the stream's tail; table is the
	// codebook's code of each symbol (code << 5 | length) and tailStart
	// where each stream's tail starts in the block's tail region, in bits.
	v3        bool
	table     []uint32
	tailStart [codec.Streams]int

	Encoded *codec.Tensor // the block encoded alone by the codec
	Check   error         // a disagreement between this walk and the encoder
}

// CapacityBits is the bits each stream of the block holds.
func (a *Analysis) CapacityBits() int { return 8 * a.StreamBytes }

// OverflowBytes is the block's overflow region: one marker per spilling
// stream plus one raw byte per spilled exponent; in version 3 its tails.
func (a *Analysis) OverflowBytes() int {
	if a.v3 {
		return len(a.Encoded.Overflow)
	}
	return a.SpillingStreams + a.Spilled
}

// V3 says whether the block is coded in format version 3: stream heads and
// tails, residues of ResidueBits each.
func (a *Analysis) V3() bool { return a.v3 }

// ResidueBits is the bits each value of the block stores as they are.
func (a *Analysis) ResidueBits() int {
	if !a.v3 {
		return 8
	}
	return codec.ResidueBits(&a.Detail.Codebook, a.Detail.Layout.Sign)
}

// Analyze walks the block of d through the codec.
func Analyze(d session.TensorDetail) (*Analysis, error) {
	n := len(d.Values)
	switch {
	case n == 0:
		return nil, fmt.Errorf("tensor %s: the trainer's detail holds no values", d.Name)
	case d.Layout.BlockSize > 0 && n > d.Layout.BlockSize:
		return nil, fmt.Errorf("tensor %s: detail holds %d values, more than one block of %d", d.Name, n, d.Layout.BlockSize)
	}
	if err := d.Codebook.Validate(); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", d.Name, err)
	}
	if err := d.Layout.Validate(); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", d.Name, err)
	}
	a := &Analysis{Detail: d, N: n, StreamBytes: d.Layout.BlockStreamBytes(n, 0), start: make([]int32, n)}
	a.Codes, a.Esc = d.Codebook.Codes()
	if d.Layout.FormatVersion() == codec.FormatVersion3 {
		return a.analyze3()
	}
	capBits := a.CapacityBits()
	spilling := [codec.Streams]bool{}
	for i, v := range d.Values {
		_, e := codec.Split(v)
		j := d.Layout.Stream(i)
		a.Count[j]++
		if d.Codebook.Lengths[e] == 0 {
			a.Escaped++
		}
		cost := d.Codebook.Cost(e)
		// A stream codes in position order until the first code that does
		// not fit; that one and every later exponent of the stream spill.
		if !spilling[j] && a.FillBits[j]+cost <= capBits {
			a.start[i] = int32(a.FillBits[j])
			a.FillBits[j] += cost
			a.Coded[j]++
			continue
		}
		if !spilling[j] {
			spilling[j] = true
			a.SpillingStreams++
		}
		a.start[i] = -1
		a.Spilled++
	}

	var enc codec.Encoder
	enc.Workers = 1
	a.Encoded = &codec.Tensor{}
	if err := enc.Encode(a.Encoded, d.Values, d.Codebook, d.Layout); err != nil {
		return nil, fmt.Errorf("tensor %s: encoding its first block: %w", d.Name, err)
	}
	a.Check = a.crossCheck()
	return a, nil
}

// analyze3 walks a version 3 block: every code goes into its stream, those
// that end past the head into its tail.
func (a *Analysis) analyze3() (*Analysis, error) {
	d := a.Detail
	a.v3 = true
	a.table = d.Codebook.CodeTable()
	capBits := a.CapacityBits()
	tailed := [codec.Streams]bool{}
	for i, v := range d.Values {
		j := d.Layout.Stream(i)
		a.Count[j]++
		if d.Codebook.Escapes(v) {
			a.Escaped++
		}
		a.start[i] = int32(a.FillBits[j])
		a.FillBits[j] += int(a.table[d.Codebook.SymbolOf(v)] & 31)
		if a.FillBits[j] > capBits {
			a.Spilled++
			tailed[j] = true
		} else {
			a.Coded[j]++
		}
	}
	for j := range tailed {
		if tailed[j] {
			a.SpillingStreams++
		}
	}
	var enc codec.Encoder
	enc.Workers = 1
	a.Encoded = &codec.Tensor{}
	// The block is walked under d.Codebook: it codes with that one, never
	// one of its own (codec.BlockPlan has chosen between them).
	l := d.Layout
	l.BlockCodebooks = false
	if err := enc.Encode(a.Encoded, d.Values, d.Codebook, l); err != nil {
		return nil, fmt.Errorf("tensor %s: encoding its first block: %w", d.Name, err)
	}
	if u := a.Encoded.TailUnits[0]; u != 0 {
		at := 0
		for j := range codec.Streams {
			a.tailStart[j] = at
			at += tailLen(a.Encoded.TailLens, j) << (u - 1)
		}
	}
	a.Check = a.crossCheck()
	return a, nil
}

// tailLen is field j of a block's tail length table (format.md §7.3).
func tailLen(lens []byte, j int) int {
	bit := 5 * j
	v := uint16(lens[bit/8]) << 8
	if bit/8+1 < len(lens) {
		v |= uint16(lens[bit/8+1])
	}
	return int(v>>(11-bit%8)) & 31
}

// crossCheck compares the walk with what the encoder wrote.
func (a *Analysis) crossCheck() error {
	st := a.Encoded.Stats
	if st.Spilled != a.Spilled || st.SpillingStreams != a.SpillingStreams || st.Escaped != a.Escaped {
		return fmt.Errorf("encoder reports %d spilled in %d streams and %d escaped; the walk found %d in %d and %d",
			st.Spilled, st.SpillingStreams, st.Escaped, a.Spilled, a.SpillingStreams, a.Escaped)
	}
	for i := range a.Detail.Values {
		v := a.Value(i)
		if !v.Spilled && v.StoredCode != v.Code {
			return fmt.Errorf("value %d: stream %d holds code %0*b at bit %d, the codebook says %0*b",
				i, v.Stream, v.Len, v.StoredCode, v.StartBit, v.Len, v.Code)
		}
	}
	return nil
}

// Value is one element of the block followed through the codec.
type Value struct {
	// Residue is what version 3 stores of the value as it is (ResidueBits);
	// Symbol the version 3 symbol its code is of (format.md §7.1).
	Residue  uint16
	Symbol   int
	Index    int
	Bits     uint16
	Float    float32
	SF, Exp  byte
	Escaped  bool
	Code     uint32 // the code written: the exponent's, or ESC then the literal
	Len      int    // bits of Code
	CodeLen  int    // bits of the exponent's code or of ESC alone
	Stream   int    // j = (i mod 256 + i div 256) mod 256 (format v2; v1: i mod 256)
	Position int    // p = i div 256
	StartBit int    // first bit in the stream; -1 if spilled
	Spilled  bool
	// SpillRank is the exponent's place among its stream's spilled ones,
	// and SpillByte its byte offset in the block's overflow region.
	SpillRank, SpillByte int
	StoredCode           uint32 // the Len bits read back from the encoded stream
}

// Value follows element i (0 <= i < N).
func (a *Analysis) Value(i int) Value {
	raw := a.Detail.Values[i]
	sf, e := codec.Split(raw)
	v := Value{
		Index: i, Bits: raw, Float: math.Float32frombits(uint32(raw) << 16), SF: sf, Exp: e,
		Stream: a.Detail.Layout.Stream(i), Position: i / codec.Streams, StartBit: int(a.start[i]),
	}
	if a.v3 {
		cb := &a.Detail.Codebook
		v.Symbol = cb.SymbolOf(raw)
		low := uint16(1)<<(7-cb.Split) - 1
		v.Residue = raw & low
		if a.ResidueBits() == 8-int(cb.Split) {
			v.Residue |= raw >> 15 << (7 - cb.Split)
		}
		c := a.table[v.Symbol]
		v.Code, v.Len = c>>5, int(c&31)
		v.Escaped = a.Detail.Codebook.Escapes(raw)
		v.CodeLen = v.Len
		if v.Escaped {
			v.CodeLen -= 8
		}
		v.Spilled = v.StartBit+v.Len > a.CapacityBits()
		v.SpillByte = -1
		v.StoredCode = a.readBits(v.Stream, v.StartBit, v.Len)
		return v
	}
	if l := a.Detail.Codebook.Lengths[e]; l > 0 {
		v.Code, v.Len, v.CodeLen = uint32(a.Codes[e]), int(l), int(l)
	} else {
		esc := int(a.Detail.Codebook.EscLen)
		v.Escaped = true
		v.Code = uint32(a.Esc)<<8 | uint32(e)
		v.Len, v.CodeLen = esc+8, esc
	}
	if v.StartBit < 0 {
		v.Spilled = true
		// Overflow region: markers of the spilling streams first, then
		// the spilled exponents stream by stream in position order.
		v.SpillByte = a.SpillingStreams
		for j := 0; j < v.Stream; j++ {
			v.SpillByte += a.Count[j] - a.Coded[j]
		}
		v.SpillRank = v.Position - a.Coded[v.Stream]
		v.SpillByte += v.SpillRank
		return v
	}
	v.StoredCode = a.readBits(v.Stream, v.StartBit, v.Len)
	return v
}

// readBits reads n bits of stream j from bit b of the encoded stream area:
// byte k of stream j lives at k·256 + j, bits MSB-first; in version 3 the
// bits past the head are the stream's tail.
func (a *Analysis) readBits(j, b, n int) uint32 {
	var out uint32
	capBits := a.CapacityBits()
	for k := 0; k < n; k++ {
		bit := b + k
		var x byte
		if bit < capBits {
			x = a.Encoded.Streams[(bit/8)*codec.Streams+j] >> (7 - bit%8)
		} else {
			t := a.tailStart[j] + bit - capBits
			x = a.Encoded.Overflow[t/8] >> (7 - t%8)
		}
		out = out<<1 | uint32(x&1)
	}
	return out
}

// StreamByteValue is byte k of stream j as encoded: from its head, or in
// version 3 past the head from its tail (0 past the stream's bits).
func (a *Analysis) StreamByteValue(j, k int) byte {
	if k < a.StreamBytes {
		return a.Encoded.Streams[k*codec.Streams+j]
	}
	if !a.v3 {
		return 0
	}
	var x byte
	for bit := range 8 {
		t := a.tailStart[j] + 8*k + bit - a.CapacityBits()
		if t/8 < len(a.Encoded.Overflow) {
			x |= (a.Encoded.Overflow[t/8] >> (7 - t%8) & 1) << (7 - bit)
		}
	}
	return x
}

// StreamByte is where bit b of stream j lives in the block's stream area.
func StreamByte(j, b int) int { return (b/8)*codec.Streams + j }

// NextEscaped returns the first escaped element after i, wrapping; -1 if none.
func (a *Analysis) NextEscaped(i int) int {
	return a.next(i, func(k int) bool { return a.Detail.Codebook.Escapes(a.Detail.Values[k]) })
}

// NextSpilled returns the first spilled element after i, wrapping; -1 if none.
func (a *Analysis) NextSpilled(i int) int {
	return a.next(i, func(k int) bool { return a.Value(k).Spilled })
}

func (a *Analysis) next(i int, ok func(int) bool) int {
	for d := 1; d <= a.N; d++ {
		k := ((i+d)%a.N + a.N) % a.N
		if ok(k) {
			return k
		}
	}
	return -1
}
