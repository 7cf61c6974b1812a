package codec

import (
	"encoding/binary"
	"fmt"
)

// block3 is one block's bookkeeping in a version 3 encode.
type block3 struct {
	c         int    // full-block C
	cbytes    int    // C_b
	unit      uint8  // tail unit code (0: no tails)
	tailBits  int    // the tail region's bits before padding
	areaStart int    // where its heads start in Streams
	tailStart int    // where its tail region starts in Overflow
	codeBits  uint64 // the bits of its codes
	spilled   int    // codes that end past the head
	tailed    int    // streams with a tail
	escaped   int
}

// encoder3 is an Encoder's state for format version 3.
type encoder3 struct {
	blocks  []block3
	x       []uint32   // per block and stream: the bits of its codes
	tables  [][]uint32 // per codebook: code (with ESC literal) << 5 | length, by symbol
	tableOf []int      // per block with codebooks per block: its table (0: the tensor's)
	search  bool       // choose each block's C
	scratch []encodeScratch3
	codes   []uint16

	// The run in progress.
	src  []uint16
	dst  *Tensor
	pass int // 1: measure, 2: encode
}

// encodeScratch3 is one worker's scratch: a stream's codes and bytes, and
// four histograms of exponents (the values of a row go to them in turn, so
// that a run of equal exponents does not wait on one counter).
type encodeScratch3 struct {
	syms  [Streams]uint32
	buf   [maxStreamCodeBits/8 + 8]byte
	hists [4]Histogram
}

// measureRows adds each value's code length to its stream's x, row by row
// (value c of row p goes to stream (c + p) mod 256), and counts exponents.
func measureRows(x *[Streams]uint32, hists *[4]Histogram, block []uint16, table *[maxSymbols]uint32, shift uint, mask uint16) {
	for base := 0; base < len(block); base += Streams {
		turn := base / Streams
		row := block[base:min(base+Streams, len(block))]
		c := 0
		for ; c+4 <= len(row); c += 4 {
			r := row[c : c+4 : c+4]
			hists[0][byte(r[0]>>7)]++
			hists[1][byte(r[1]>>7)]++
			hists[2][byte(r[2]>>7)]++
			hists[3][byte(r[3]>>7)]++
			x[(c+turn)&(Streams-1)] += table[int(r[0]&mask)>>shift] & 31
			x[(c+1+turn)&(Streams-1)] += table[int(r[1]&mask)>>shift] & 31
			x[(c+2+turn)&(Streams-1)] += table[int(r[2]&mask)>>shift] & 31
			x[(c+3+turn)&(Streams-1)] += table[int(r[3]&mask)>>shift] & 31
		}
		for ; c < len(row); c++ {
			v := row[c]
			hists[0][byte(v>>7)]++
			x[(c+turn)&(Streams-1)] += table[int(v&mask)>>shift] & 31
		}
	}
}

// encode3 is EncodeBlocks for format version 3; caps are the blocks' C
// where layout.PerBlock (nil: search them).
func (e *Encoder) encode3(dst *Tensor, src []uint16, cb Codebook, layout Layout, caps []uint16) error {
	if err := cb.validate(FormatVersion3); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	if s := layout.Sign; s != SignMixed {
		if got := SignOf(src); got != s && !(got == SignPlus && len(src) == 0) {
			return fmt.Errorf("codec: encode: layout says every sign is %v, the values' are %v", s, got)
		}
	}
	if layout.BlockCodebooks && cb.Dist != Empirical {
		return fmt.Errorf("codec: encode: codebooks per block for a %s codebook (empirical only)", cb.Dist)
	}
	layout = layout.WithVersion(FormatVersion3)
	n := len(src)
	nb := layout.Blocks(n)
	s := &e.v3
	s.search = layout.PerBlock && len(caps) == 0
	if layout.PerBlock && !s.search && len(caps) != nb {
		return fmt.Errorf("codec: encode: %d capacities per block, want %d", len(caps), nb)
	}
	dst.N = n
	dst.Codebook = cb
	dst.CompactCodebook, dst.DerivedCodebook = false, DerivedCodebook(&cb, layout)
	dst.Bitmaps, dst.Offsets = nil, nil

	// Codebooks of their own for the blocks they pay in.
	own := dst.BlockCodebooks[:0]
	if layout.BlockCodebooks {
		own = e.blockCodebooks(own, src, &dst.Codebook, layout)
	}
	dst.BlockCodebooks = nil
	if len(own) > 0 {
		dst.BlockCodebooks = own
	}
	layout.BlockCodebooks = len(dst.BlockCodebooks) > 0
	s.tables = s.tables[:0]
	s.tables = append(s.tables, s.encodeTable(s.nextTable(), &dst.Codebook))
	s.tableOf = s.tableOf[:0]
	for b := range dst.BlockCodebooks {
		s.tableOf = append(s.tableOf, 0)
		if dst.hasOwnCodebook(b) {
			s.tableOf[b] = len(s.tables)
			s.tables = append(s.tables, s.encodeTable(s.nextTable(), &dst.BlockCodebooks[b]))
		}
	}
	dst.Layout = layout

	s.blocks = resize(s.blocks, nb)
	s.x = resize(s.x, nb*Streams)
	for b := range nb {
		c := layout.StreamBytes
		if layout.PerBlock && !s.search {
			c = int(caps[b])
		}
		s.blocks[b] = block3{c: c}
	}
	workers := workerCount(e.Workers, nb)
	if len(s.scratch) < workers {
		s.scratch = append(s.scratch, make([]encodeScratch3, workers-len(s.scratch))...)
	}
	for w := range workers {
		for h := range s.scratch[w].hists {
			clear(s.scratch[w].hists[h][:])
		}
	}
	s.src, s.dst = src, dst
	s.pass = 1
	e.ps.runBlocks(s, workers, nb)

	// Where each block's heads and tails go.
	area, tail := 0, 0
	if layout.PerBlock {
		dst.BlockBytes = resize(dst.BlockBytes, nb)
		for b := range nb {
			dst.BlockBytes[b] = uint16(s.blocks[b].c)
		}
		if s.search {
			layout.StreamBytes = maxCapacity(dst.BlockBytes)
			dst.Layout = layout
		}
	} else {
		dst.BlockBytes = nil
	}
	dst.TailUnits = resize(dst.TailUnits, nb)
	for b := range nb {
		k := &s.blocks[b]
		k.areaStart, k.tailStart = area, tail
		area += Streams * k.cbytes
		tail += (k.tailBits + 7) / 8
		dst.TailUnits[b] = k.unit
	}
	if err := layout.validate(); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	if err := dst.checkBlockBytes(); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	w := ResidueBits(&cb, layout.Sign)
	dst.SF = resize(dst.SF, residueBytes(n, w))
	dst.Streams = resize(dst.Streams, area)
	dst.Overflow = resize(dst.Overflow, tail)
	clear(dst.Overflow)
	dst.TailLens = resize(dst.TailLens, nb*tailTableBytes)
	clear(dst.TailLens)
	s.pass = 2
	e.ps.runBlocks(s, workers, nb)
	s.src, s.dst = nil, nil

	var st Stats
	for w := range workers {
		for h := range s.scratch[w].hists {
			st.Histogram.add(&s.scratch[w].hists[h])
		}
	}
	var codeBits uint64
	for b := range nb {
		k := &s.blocks[b]
		codeBits += k.codeBits
		st.Spilled += k.spilled
		st.SpillingStreams += k.tailed
		st.Escaped += k.escaped
	}
	st.Finish(dst, codeBits)
	dst.Stats = st
	return nil
}

// nextTable is the next table slice to reuse, or nil.
func (s *encoder3) nextTable() []uint32 {
	if len(s.tables) < cap(s.tables) {
		return s.tables[:len(s.tables)+1][len(s.tables)]
	}
	return nil
}

// encodeTable fills t with cb's code of each symbol: code << 5 | length,
// ESC t and the exponent for an escaped symbol.
func (s *encoder3) encodeTable(t []uint32, cb *Codebook) []uint32 {
	c := cb.symCode()
	var esc [1 << MaxSplit]uint16
	s.codes, esc = c.codes(s.codes)
	codes := s.codes
	// Every table has the largest alphabet's entries, so that the coding
	// loops index a fixed-size array (the entries past c's are 0).
	t = resize(t, maxSymbols)
	clear(t[len(c.lens):])
	for s, l := range c.lens {
		if l != 0 {
			t[s] = uint32(codes[s])<<5 | uint32(l)
		} else {
			x := c.escOf(s)
			t[s] = (uint32(esc[x])<<literalBits|uint32(c.expOf(s)))<<5 | uint32(c.esc[x]+literalBits)
		}
	}
	return t
}

func (s *encoder3) table(b int) []uint32 {
	if len(s.tableOf) == 0 {
		return s.tables[0]
	}
	return s.tables[s.tableOf[b]]
}

func (s *encoder3) runBlock(worker, b int) {
	if s.pass == 1 {
		s.measure(worker, b)
	} else {
		s.encode(worker, b)
	}
}

// measure counts the bits of block b's streams and the exponents, and
// settles the block's C (where searched), head capacity and tails.
func (s *encoder3) measure(worker, b int) {
	t := s.dst
	l := t.Layout
	B := l.BlockSize
	nbLen := l.blockLen(t.N, b)
	block := s.src[b*B : b*B+nbLen]
	table := (*[maxSymbols]uint32)(s.table(b))
	shift, mask := symbolShift(t.blockCodebook(b))
	x := (*[Streams]uint32)(s.x[b*Streams : (b+1)*Streams])
	clear(x[:])
	ws := &s.scratch[worker]
	measureRows(x, &ws.hists, block, table, shift, mask)
	k := &s.blocks[b]
	if s.search {
		k.c = leastBytesV3(x, l, t.N, b)
	}
	k.cbytes = l.scaledStreamBytes(t.N, b, k.c)
	k.unit, k.tailBits = blockTails(x, 8*k.cbytes)
}

// encode writes block b: its residues, heads, tail lengths and tails.
func (s *encoder3) encode(worker, b int) {
	t := s.dst
	l := t.Layout
	B := l.BlockSize
	nbLen := l.blockLen(t.N, b)
	start := b * B
	block := s.src[start : start+nbLen]
	k := &s.blocks[b]
	k.codeBits, k.spilled, k.tailed, k.escaped = 0, 0, 0, 0
	cb := t.blockCodebook(b)
	split := uint(cb.Split)
	w := uint(ResidueBits(cb, l.Sign))
	packResidues(t.SF[start*int(w)/8:residueBytes(start+nbLen, int(w))], block, split, w)

	table := (*[maxSymbols]uint32)(s.table(b))
	shift, mask := symbolShift(cb)
	area := t.Streams[k.areaStart : k.areaStart+Streams*k.cbytes]
	capBits := uint32(8 * k.cbytes)
	x := s.x[b*Streams : (b+1)*Streams]
	lens := t.TailLens[b*tailTableBytes : (b+1)*tailTableBytes]
	tail := t.Overflow[k.tailStart : k.tailStart+(k.tailBits+7)/8]
	tailPos := 0
	buf := &s.scratch[worker].buf
	syms := &s.scratch[worker].syms
	for j := range Streams {
		count := l.StreamCount(nbLen, j)
		// The stream's codes in position order: position p of stream j holds
		// element p·256 + (j − p) mod 256, j + 255p while p <= j and
		// j + 256 + 255p after.
		gatherCodes(syms, block, j, count, table, shift, mask)
		pos, out, escaped := packCodes(buf, syms[:count])
		fitted := count
		if pos > capBits {
			// Codes that end past the head: from the last back while they do.
			end := pos
			for p := count - 1; p >= 0 && end > capBits; p-- {
				fitted--
				end -= syms[p] & 31
			}
		}
		if pos != x[j] {
			panic("codec: encode: stream bits differ between passes")
		}
		k.codeBits += uint64(pos)
		k.spilled += count - fitted
		k.escaped += escaped
		// The head: the stream's first C_b bytes, interleaved.
		hb := min(out, k.cbytes)
		for i := range hb {
			area[i<<8|j] = buf[i]
		}
		for i := hb; i < k.cbytes; i++ {
			area[i<<8|j] = 0
		}
		if L := tailLen(int(pos), int(capBits), k.unit); L > 0 {
			k.tailed++
			putTailLen(lens, j, L)
			copyBits(tail, tailPos, buf[:out], int(capBits), int(pos-capBits))
			tailPos += L << (k.unit - 1)
		}
	}
}

// gatherCodes sets syms[p] to the code of position p of stream j of a
// block: element p·256 + (j − p) mod 256, j + 255p while p <= j and
// j + 256 + 255p after.
func gatherCodes(syms *[Streams]uint32, block []uint16, j, count int, table *[maxSymbols]uint32, shift uint, mask uint16) {
	first := min(count, j+1)
	for p, i := 0, j; p < first; p, i = p+1, i+Streams-1 {
		syms[p] = table[int(block[i]&mask)>>shift]
	}
	for p, i := first, j+Streams+(Streams-1)*first; p < count; p, i = p+1, i+Streams-1 {
		syms[p] = table[int(block[i]&mask)>>shift]
	}
}

// packCodes writes codes (code << 5 | length) one after another into buf,
// MSB-first, the last byte zero-padded, and returns their bits, the bytes
// written and how many are escapes (longer than 8 bits).
func packCodes(buf *[maxStreamCodeBits/8 + 8]byte, codes []uint32) (pos uint32, out, escaped int) {
	var acc uint64
	var pend uint32
	for _, c := range codes {
		n := c & 31
		acc = acc<<n | uint64(c>>5)
		pend += n
		pos += n
		escaped += int(n+7) >> 4
		if pend >= 32 {
			pend -= 32
			binary.BigEndian.PutUint32(buf[out:], uint32(acc>>pend))
			out += 4
		}
	}
	for pend >= 8 {
		pend -= 8
		buf[out] = byte(acc >> pend)
		out++
	}
	if pend > 0 {
		buf[out] = byte(acc << (8 - pend))
		out++
	}
	return pos, out, escaped
}

// putTailLen sets field j of a tail length table (5 bits, MSB-first).
func putTailLen(lens []byte, j, L int) {
	bit := tailLenBits * j
	v := uint16(L) << (16 - tailLenBits - bit%8)
	lens[bit/8] |= byte(v >> 8)
	if bit%8 > 8-tailLenBits {
		lens[bit/8+1] |= byte(v)
	}
}

// getTailLen reads field j of a tail length table.
func getTailLen(lens []byte, j int) int {
	bit := tailLenBits * j
	v := uint16(lens[bit/8]) << 8
	if bit/8+1 < len(lens) {
		v |= uint16(lens[bit/8+1])
	}
	return int(v>>(16-tailLenBits-bit%8)) & tailLenMax
}

// copyBits ORs n bits of src, from bit soff, into dst at bit doff (both
// MSB-first; dst's bits there are 0).
func copyBits(dst []byte, doff int, src []byte, soff, n int) {
	for n > 0 {
		m := min(n, 24)
		v := readBits(src, uint(soff), uint(m))
		// Place m bits at doff: they span at most 4 bytes.
		sh := 32 - m - doff%8
		w := uint32(v) << sh
		at := doff / 8
		for i := 0; i < 4 && at+i < len(dst); i++ {
			dst[at+i] |= byte(w >> (24 - 8*i))
		}
		n -= m
		soff += m
		doff += m
	}
}

// blockCodebooks fits each block a codebook of its own (split and sign of
// cb) to its values, and keeps it where, its bytes paid, it codes the block
// in fewer bits than cb does: one entry per block, the zero Codebook where
// the block keeps cb; nothing when no block has its own.
func (e *Encoder) blockCodebooks(dst []Codebook, src []uint16, cb *Codebook, l Layout) []Codebook {
	// A tensor of one block may be a piece of a larger one (WritePieces),
	// whose codebook was fitted to more than this block.
	nb := l.Blocks(len(src))
	if nb == 0 {
		return dst[:0]
	}
	dst = resize(dst, nb)
	f := &e.fit3
	f.src, f.l, f.cb, f.out = src, l, cb, dst
	workers := workerCount(e.Workers, nb)
	if len(f.fitters) < workers {
		f.fitters = append(f.fitters, make([]splitFitter, workers-len(f.fitters))...)
	}
	e.ps.runBlocks(f, workers, nb)
	f.src, f.cb, f.out = nil, nil, nil
	for b := range dst {
		if dst[b].EscLen != 0 {
			return dst
		}
	}
	return dst[:0]
}

// blockFit fits the codebooks per block.
type blockFit struct {
	src     []uint16
	l       Layout
	cb      *Codebook
	out     []Codebook
	fitters []splitFitter
}

func (f *blockFit) runBlock(worker, b int) {
	B := f.l.BlockSize
	block := f.src[b*B : b*B+f.l.blockLen(len(f.src), b)]
	var h SplitHistogram
	h.add(block)
	f.out[b] = Codebook{}
	if own, ok := f.fitters[worker].ownCodebook(&h, f.cb); ok {
		f.out[b] = own
	}
}

// ownCodebook fits a block with split histogram h its own codebook (split
// and sign of cb); ok says it codes the block, its bytes paid, in fewer
// bits than cb does.
func (f *splitFitter) ownCodebook(h *SplitHistogram, cb *Codebook) (own Codebook, ok bool) {
	own, ownBits := f.fitK(h, uint(cb.Split), cb.Signed)
	c := cb.symCode()
	var shared uint64
	for bin, n := range h {
		if n != 0 {
			shared += n * uint64(c.cost(c.symbolOfBin(bin)))
		}
	}
	return own, int(shared)-int(ownBits) > 8*codebookBytes3(&own)
}

// BlockPlan is what the encoder of a tensor under codebook cb and layout l
// codes one of its blocks, whose values are block, with (for a view of a
// single block that must be the tensor's block byte for byte): in format
// version 3 the block's own codebook where l lets blocks have one and it
// pays, else cb; and where l has capacities per block, the layout of that
// block's C (one C, no codebooks per block).
func BlockPlan(cb Codebook, l Layout, block []uint16) (Codebook, Layout) {
	l = l.Normalized()
	if !l.v3() {
		return cb, ChooseBlockLayout(l, &cb, block)
	}
	if l.BlockCodebooks && cb.Dist == Empirical {
		h := FullSplitHistogram(block)
		var f splitFitter
		if own, ok := f.ownCodebook(&h, &cb); ok {
			cb = own
		}
	}
	l.BlockCodebooks = false
	if l.PerBlock && len(block) > 0 {
		c := cb.symCode()
		var x [Streams]uint32
		for i, v := range block {
			x[l.Stream(i)] += uint32(c.cost(c.symbol(v)))
		}
		l.StreamBytes = leastBytesV3(&x, l, len(block), 0)
	}
	l.PerBlock = false
	return cb, l
}

// hasOwnCodebook says whether block b has a codebook of its own.
func (t *Tensor) hasOwnCodebook(b int) bool {
	return b < len(t.BlockCodebooks) && t.BlockCodebooks[b].EscLen != 0
}

// blockCodebook is the codebook block b is coded with.
func (t *Tensor) blockCodebook(b int) *Codebook {
	if t.hasOwnCodebook(b) {
		return &t.BlockCodebooks[b]
	}
	return &t.Codebook
}

// maxSymbols is the largest alphabet's symbols (format.md §7.1).
const maxSymbols = 256 << MaxSplit

// symbolShift gives a value's symbol under cb as (v & mask) >> shift.
func symbolShift(cb *Codebook) (shift uint, mask uint16) {
	mask = 0x7FFF
	if cb.Signed {
		mask = 0xFFFF
	}
	return 7 - uint(cb.Split), mask
}

// BlockCodebooks is what the version 3 encoder fits the blocks of src
// under codebook cb and layout l (with Layout.BlockCodebooks): one entry a
// block, its own codebook or the zero Codebook where it keeps cb; nil where
// no block has one. For an encoder outside this package (the GPU's).
func BlockCodebooks(src []uint16, cb *Codebook, l Layout) []Codebook {
	if !l.BlockCodebooks || cb.Dist != Empirical {
		return nil
	}
	var e Encoder
	own := e.blockCodebooks(nil, src, cb, l)
	if len(own) == 0 {
		return nil
	}
	return own
}

// BlockHeads is what the version 3 encoder makes of block b of an n-value
// tensor laid out as l whose streams' codes take x bits: the block's
// full-block C (AUTO's search where search, else c), its head bytes C_b,
// its tail unit code, each stream's tail length set in lens (the block's
// 160-byte table, zeroed) and its tail region's bytes (format.md §7.3). For
// an encoder outside this package that counts x itself (the GPU's).
func BlockHeads(x *[Streams]uint32, l Layout, n, b, c int, search bool, lens []byte) (full, cbytes int, unit uint8, tailBytes int) {
	if search {
		c = leastBytesV3(x, l, n, b)
	}
	cbytes = l.scaledStreamBytes(n, b, c)
	unit, bits := blockTails(x, 8*cbytes)
	for j, v := range x {
		if L := tailLen(int(v), 8*cbytes, unit); L > 0 {
			putTailLen(lens, j, L)
		}
	}
	return c, cbytes, unit, (bits + 7) / 8
}
