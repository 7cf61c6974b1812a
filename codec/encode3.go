package codec

import (
	"encoding/binary"
	"fmt"
	"slices"
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
	tailsBy   int // one pass: the worker whose tails holds its tail region
	tailsAt   int // where it starts there
	codedBy   int // searched C: the worker whose coded holds its streams' bytes
	codedAt   int // where they start there
}

// encoder3 is an Encoder's state for format version 3.
type encoder3 struct {
	blocks    []block3
	x         []uint32   // per block and stream: the bits of its codes
	tables    [][]uint32 // per codebook: code (with ESC literal) << 5 | length, by symbol
	tableOf   []int      // per block with codebooks per block: its table (0: the tensor's)
	search    bool       // choose each block's C
	onePass   bool       // C is given: heads go out as the codes are packed
	counted   bool       // the exponents and escapes were counted with the blocks' codebooks
	escapedOf []int      // where counted, per block: the values its codebook escapes
	scratch   []encodeScratch3
	codes     []uint16

	// The run in progress.
	src  []uint16
	dst  *Tensor
	pass int // 1: code (in one pass, code and lay out), 2: lay out
}

// encodeScratch3 is one worker's scratch: four streams' bytes, and
// four histograms of exponents (the values of a row go to them in turn, so
// that a run of equal exponents does not wait on one counter).
//
// In one pass it also keeps the bytes of the codes past the heads (spill,
// a block's at a time) and the tail regions of the blocks it packed
// (tails), which go to Overflow once every block's place there is known.
// With C searched it keeps the packed streams of the blocks it coded
// (coded), which the second pass lays out once each block's C is chosen.
type encodeScratch3 struct {
	bufs  [4]streamBuf
	hists [4]Histogram
	spill []byte
	tails []byte
	coded []byte
}

// countExponents counts the exponents of block, the values in turn over
// the four histograms.
func countExponents(hists *[4]Histogram, block []uint16) {
	i := 0
	for ; i+4 <= len(block); i += 4 {
		r := block[i : i+4 : i+4]
		hists[0][byte(r[0]>>7)]++
		hists[1][byte(r[1]>>7)]++
		hists[2][byte(r[2]>>7)]++
		hists[3][byte(r[3]>>7)]++
	}
	for ; i < len(block); i++ {
		hists[0][byte(block[i]>>7)]++
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

	workers := workerCount(e.Workers, nb)
	if len(s.scratch) < workers {
		s.scratch = append(s.scratch, make([]encodeScratch3, workers-len(s.scratch))...)
	}
	for w := range workers {
		for h := range s.scratch[w].hists {
			clear(s.scratch[w].hists[h][:])
		}
		s.scratch[w].tails = s.scratch[w].tails[:0]
		s.scratch[w].coded = s.scratch[w].coded[:0]
	}

	// Codebooks of their own for the blocks they pay in; their fits count
	// the exponents, as the blocks' split histograms do where the caller
	// gave them.
	own := dst.BlockCodebooks[:0]
	s.counted = (layout.BlockCodebooks || e.fit3.given != nil) && nb > 0
	if s.counted {
		e.fit3.hists = s.scratch
		e.fit3.countOnly = !layout.BlockCodebooks
		own = e.blockCodebooks(own, src, &dst.Codebook, layout)
		e.fit3.hists, e.fit3.countOnly = nil, false
		s.escapedOf = e.fit3.escaped
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
	// With C given, each block's heads have their place before its codes
	// are counted, and one pass packs and lays them out.
	s.onePass = !s.search
	w := ResidueBits(&cb, layout.Sign)
	dst.SF = resize(dst.SF, residueBytes(n, w))
	area := 0
	if s.onePass {
		for b := range nb {
			k := &s.blocks[b]
			k.cbytes = layout.scaledStreamBytes(n, b, k.c)
			k.areaStart = area
			area += Streams * k.cbytes
		}
		dst.Streams = resize(dst.Streams, area)
		dst.TailLens = resize(dst.TailLens, nb*tailTableBytes)
		clear(dst.TailLens)
	}
	s.src, s.dst = src, dst
	s.pass = 1
	e.ps.runBlocks(s, workers, nb)

	// Where each block's heads and tails go.
	tail := 0
	if !s.onePass {
		area = 0
	}
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
		if !s.onePass {
			k.areaStart = area
			area += Streams * k.cbytes
		}
		k.tailStart = tail
		tail += (k.tailBits + 7) / 8
		dst.TailUnits[b] = k.unit
	}
	if err := layout.validate(); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	if err := dst.checkBlockBytes(); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	dst.Overflow = resize(dst.Overflow, tail)
	if s.onePass {
		for b := range nb {
			k := &s.blocks[b]
			m := (k.tailBits + 7) / 8
			copy(dst.Overflow[k.tailStart:k.tailStart+m], s.scratch[k.tailsBy].tails[k.tailsAt:])
		}
	} else {
		dst.Streams = resize(dst.Streams, area)
		clear(dst.Overflow)
		dst.TailLens = resize(dst.TailLens, nb*tailTableBytes)
		clear(dst.TailLens)
		s.pass = 2
		e.ps.runBlocks(s, workers, nb)
	}
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
	switch {
	case s.pass == 1 && s.onePass:
		s.packBlock(worker, b)
	case s.pass == 1:
		s.codeBlock(worker, b)
	default:
		s.placeBlock(worker, b)
	}
}

// startBlock does what both coding passes do first for block b: it resets
// the block's figures, counts its exponents into the worker's histograms
// where the plan did not, and packs its residues. It returns the block's
// values, figures, codebook and the worker's scratch.
func (s *encoder3) startBlock(worker, b int) (block []uint16, k *block3, cb *Codebook, ws *encodeScratch3) {
	t := s.dst
	start := b * t.Layout.BlockSize
	block = s.src[start : start+t.Layout.blockLen(t.N, b)]
	k = &s.blocks[b]
	k.codeBits, k.spilled, k.tailed, k.escaped = 0, 0, 0, 0
	if s.counted {
		k.escaped = s.escapedOf[b]
	}
	cb = t.blockCodebook(b)
	ws = &s.scratch[worker]
	if !s.counted {
		countExponents(&ws.hists, block)
	}
	w := uint(ResidueBits(cb, t.Layout.Sign))
	packResidues(t.SF[start*int(w)/8:residueBytes(start+len(block), int(w))], block, uint(cb.Split), w)
	return block, k, cb, ws
}

// packBlock codes and lays out block b in one pass when its C is given:
// it writes the block's residues, heads and tail lengths, and its tail
// region into the worker's tails.
func (s *encoder3) packBlock(worker, b int) {
	t, l := s.dst, s.dst.Layout
	block, k, cb, ws := s.startBlock(worker, b)
	nbLen := len(block)

	table := (*[maxSymbols]uint32)(s.table(b))
	shift, mask := symbolShift(cb)
	area := t.Streams[k.areaStart : k.areaStart+Streams*k.cbytes]
	capBits := uint32(8 * k.cbytes)
	x := (*[Streams]uint32)(s.x[b*Streams : (b+1)*Streams])
	spill := ws.spill[:0]
	for j0 := 0; j0 < Streams; j0 += 4 {
		var counts [4]int
		for q := range counts {
			counts[q] = l.StreamCount(nbLen, j0+q)
		}
		pos, out, escaped := packFour(&ws.bufs, block, j0, &counts, table, shift, mask, !s.counted)
		for q := range 4 {
			j, count, buf := j0+q, counts[q], &ws.bufs[q]
			x[j] = pos[q]
			k.codeBits += uint64(pos[q])
			if !s.counted {
				k.escaped += escaped[q]
			}
			if pos[q] > capBits {
				k.spilled += spilledCodes(block, j, count, pos[q], capBits, table, shift, mask)
				// The head ends on a byte: the bytes past it are the tail's bits.
				spill = append(spill, buf[k.cbytes:out[q]]...)
			} else if out[q] < k.cbytes {
				// A head's bytes past the stream's are 0.
				clear(buf[out[q]:min(k.cbytes, len(buf))])
			}
		}
		b0, b1, b2, b3 := &ws.bufs[0], &ws.bufs[1], &ws.bufs[2], &ws.bufs[3]
		hb := min(k.cbytes, len(b0))
		for i := range hb {
			binary.LittleEndian.PutUint32(area[i<<8|j0:], uint32(b0[i])|uint32(b1[i])<<8|uint32(b2[i])<<16|uint32(b3[i])<<24)
		}
		for i := hb; i < k.cbytes; i++ {
			clear(area[i<<8|j0 : i<<8|j0+4])
		}
	}
	ws.spill = spill

	k.unit, k.tailBits = blockTails(x, 8*k.cbytes)
	lens := t.TailLens[b*tailTableBytes : (b+1)*tailTableBytes]
	m := (k.tailBits + 7) / 8
	k.tailsBy, k.tailsAt = worker, len(ws.tails)
	ws.tails = slices.Grow(ws.tails, m)[:k.tailsAt+m]
	tail := ws.tails[k.tailsAt:]
	clear(tail)
	tailPos, from := 0, 0
	for j, v := range x {
		if v <= capBits {
			continue
		}
		bits := int(v - capBits)
		src := spill[from : from+(bits+7)/8]
		from += len(src)
		if L := tailLen(int(v), int(capBits), k.unit); L > 0 {
			k.tailed++
			putTailLen(lens, j, L)
			copyBits(tail, tailPos, src, 0, bits)
			tailPos += L << (k.unit - 1)
		}
	}
}

// streamBuf is one stream's packed codes.
type streamBuf = [maxStreamCodeBits/8 + 8]byte

// packFour packs the codes of streams j0..j0+3 of a block (counts[q]
// codes for stream j0+q) into bufs, one after another, MSB-first, the last
// byte zero-padded, and returns each stream's bits and bytes written, and
// the four streams' escapes (codes longer than 8 bits; their sum in
// escaped[0], the rest 0); two rows at a time: position p of stream j holds
// element p·256 + (j − p) mod 256, so the four streams' codes of one position
// are neighbouring elements, and their four bit buffers are independent
// chains. A buf's bytes past those written may hold anything.
func packFour(bufs *[4]streamBuf, block []uint16, j0 int, counts *[4]int, table *[maxSymbols]uint32, shift uint, mask uint16, countEscapes bool) (pos [4]uint32, out, escaped [4]int) {
	b0, b1, b2, b3 := &bufs[0], &bufs[1], &bufs[2], &bufs[3]
	// Per stream only its codes' bits and the last of them: every two rows
	// store 8 bytes from the stream's first byte not yet whole, its bits
	// since then at the top (at most 7 and two codes' 2·16), so no branch
	// waits on where a code ends; few live values keep the loop in registers.
	var a0, a1, a2, a3 uint64
	var q0, q1, q2, q3 uint32
	var esc int // all four streams': only their sum is kept
	// A stream's codes take at most maxStreamCodeBits, so a byte not yet
	// whole is below it: the mask leaves the offset as it is and spares
	// its checks.
	const byteMask = maxStreamCodeBits/8 - 1
	// (v & mask) >> shift as v >> shift & sym; a symbol is below maxSymbols
	// (validate), which the mask's last term shows the compiler.
	sym := int(mask) >> shift & (maxSymbols - 1)
	// Whole pairs of rows only: the rest goes one code at a time.
	rows := min(counts[0], counts[1], counts[2], counts[3], len(block)/Streams) &^ 1
	for p := 0; p < rows; p += 2 {
		row := (*[Streams]uint16)(block[p*Streams : p*Streams+Streams])
		next := (*[Streams]uint16)(block[p*Streams+Streams : p*Streams+2*Streams])
		c, d := uint8(j0-p), uint8(j0-p-1)
		v0, w0 := table[int(row[c])>>shift&sym], table[int(next[d])>>shift&sym]
		v1, w1 := table[int(row[c+1])>>shift&sym], table[int(next[d+1])>>shift&sym]
		v2, w2 := table[int(row[c+2])>>shift&sym], table[int(next[d+2])>>shift&sym]
		v3, w3 := table[int(row[c+3])>>shift&sym], table[int(next[d+3])>>shift&sym]
		n0, n1, n2, n3 := v0&31, v1&31, v2&31, v3&31
		m0, m1, m2, m3 := w0&31, w1&31, w2&31, w3&31
		a0, a1, a2, a3 = a0<<n0|uint64(v0>>5), a1<<n1|uint64(v1>>5), a2<<n2|uint64(v2>>5), a3<<n3|uint64(v3>>5)
		a0, a1, a2, a3 = a0<<m0|uint64(w0>>5), a1<<m1|uint64(w1>>5), a2<<m2|uint64(w2>>5), a3<<m3|uint64(w3>>5)
		if countEscapes {
			esc += int((n0+7)>>4 + (n1+7)>>4 + (n2+7)>>4 + (n3+7)>>4)
			esc += int((m0+7)>>4 + (m1+7)>>4 + (m2+7)>>4 + (m3+7)>>4)
		}
		p0, p1, p2, p3 := q0&^7, q1&^7, q2&^7, q3&^7
		q0, q1, q2, q3 = q0+n0+m0, q1+n1+m1, q2+n2+m2, q3+n3+m3
		// Bits p..q-1 at the top of the word.
		binary.BigEndian.PutUint64(b0[p0>>3&byteMask:], a0<<((p0-q0)&63))
		binary.BigEndian.PutUint64(b1[p1>>3&byteMask:], a1<<((p1-q1)&63))
		binary.BigEndian.PutUint64(b2[p2>>3&byteMask:], a2<<((p2-q2)&63))
		binary.BigEndian.PutUint64(b3[p3>>3&byteMask:], a3<<((p3-q3)&63))
	}
	pos[0], out[0], escaped[0] = packRest(b0, block, j0, rows, counts[0], table, shift, mask, a0, q0&7, int(q0>>3), esc)
	pos[1], out[1], escaped[1] = packRest(b1, block, j0+1, rows, counts[1], table, shift, mask, a1, q1&7, int(q1>>3), 0)
	pos[2], out[2], escaped[2] = packRest(b2, block, j0+2, rows, counts[2], table, shift, mask, a2, q2&7, int(q2>>3), 0)
	pos[3], out[3], escaped[3] = packRest(b3, block, j0+3, rows, counts[3], table, shift, mask, a3, q3&7, int(q3>>3), 0)
	return pos, out, escaped
}

// packRest packs positions from..count-1 of stream j after packFour's
// rows (acc holds pend bits not yet written, out bytes are), then the
// last bits, the last byte zero-padded.
func packRest(buf *streamBuf, block []uint16, j, from, count int, table *[maxSymbols]uint32, shift uint, mask uint16, acc uint64, pend uint32, out, escaped int) (pos uint32, _, _ int) {
	for p := from; p < count; p++ {
		v := table[int(block[p*Streams+int(uint8(j-p))]&mask)>>shift]
		n := v & 31
		acc = acc<<n | uint64(v>>5)
		pend += n
		escaped += int(n+7) >> 4
		if pend >= 32 {
			pend -= 32
			binary.BigEndian.PutUint32(buf[out:], uint32(acc>>pend))
			out += 4
		}
	}
	pos = uint32(8*out) + pend
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
	f.escaped = resize(f.escaped, nb)
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
	given   []SplitHistogram // the blocks' split histograms, counted by the caller (nil: count them)
	src     []uint16
	l       Layout
	cb      *Codebook
	out     []Codebook
	fitters []splitFitter
	hists   []encodeScratch3 // per worker: where each block's exponents are added (nil: nowhere)
	escaped []int            // per block: the values its codebook escapes
	// countOnly keeps cb for every block: the run only counts (exponents
	// and escapes).
	countOnly bool
}

func (f *blockFit) runBlock(worker, b int) {
	fit := &f.fitters[worker]
	var h *SplitHistogram
	if f.given != nil {
		h = &f.given[b]
	} else {
		B := f.l.BlockSize
		if fit.hist == nil {
			fit.hist = new(SplitHistogram)
		}
		h = fit.hist
		clear(h[:])
		h.add(f.src[b*B : b*B+f.l.blockLen(len(f.src), b)])
	}
	fit.bins = nonzeroBins(fit.bins, h)
	if f.hists != nil {
		// A split bin is the sign, the exponent and three fraction bits.
		eh := &f.hists[worker].hists[0]
		for _, bin := range fit.bins {
			eh[byte(bin>>MaxSplit)] += h[bin]
		}
	}
	f.out[b] = Codebook{}
	coded := f.cb
	if !f.countOnly {
		if own, ok := fit.ownCodebook(h, fit.bins, f.cb); ok {
			f.out[b] = own
			coded = &f.out[b]
		}
	}
	f.escaped[b] = escapedValues(h, fit.bins, coded)
}

// nonzeroBins is the bins of h that count something, in order, in dst.
func nonzeroBins(dst []int, h *SplitHistogram) []int {
	dst = dst[:0]
	for bin, n := range h {
		if n != 0 {
			dst = append(dst, bin)
		}
	}
	return dst
}

// escapedValues is how many values of split histogram h (bins: those of
// its bins that count something) codebook cb escapes: from the histogram,
// so that the coding loops need not count.
func escapedValues(h *SplitHistogram, bins []int, cb *Codebook) int {
	c := cb.symCode()
	n := 0
	for _, bin := range bins {
		if c.lens[c.symbolOfBin(bin)] == 0 {
			n += int(h[bin])
		}
	}
	return n
}

// ownCodebook fits a block with split histogram h (bins: those of its bins
// that count something) its own codebook (split and sign of cb); ok says
// it codes the block, its bytes paid, in fewer bits than cb does.
func (f *splitFitter) ownCodebook(h *SplitHistogram, bins []int, cb *Codebook) (own Codebook, ok bool) {
	c := cb.symCode()
	f.w = h.binWeights(f.w, bins, &c)
	own, ownBits := f.fitWeights(f.w, uint(cb.Split), cb.Signed)
	var shared uint64
	for _, bin := range bins {
		shared += h[bin] * uint64(c.cost(c.symbolOfBin(bin)))
	}
	return own, int(shared)-int(ownBits) > 8*codebookBytes3(&own)
}

// EncodeCounted is Encode in format version 3 with the split histograms
// of src's blocks given (blocks: one a block, as layout cuts src;
// BlockSplitHistograms counts them), which the fits of codebooks per block
// take instead of counting them again, and which count the exponents and
// escapes: for a caller that counted them to plan the tensor. The tensor is
// the one Encode gives.
func (e *Encoder) EncodeCounted(dst *Tensor, src []uint16, cb Codebook, layout Layout, blocks []SplitHistogram) error {
	if !layout.v3() {
		return fmt.Errorf("codec: encode: histograms per block given for format version %d", layout.FormatVersion())
	}
	if nb := layout.Blocks(len(src)); len(blocks) != nb {
		return fmt.Errorf("codec: encode: %d histograms per block, want %d", len(blocks), nb)
	}
	e.fit3.given = blocks
	defer func() { e.fit3.given = nil }()
	return e.Encode(dst, src, cb, layout)
}

// BlockSplitHistograms is the split histogram of each block of src as
// preset p's layout cuts it (in dst, reused where it is large enough) and
// their sum, every value's: what PlanHistograms and EncodeCounted take.
func BlockSplitHistograms(dst []SplitHistogram, src []uint16, p Preset) ([]SplitHistogram, SplitHistogram) {
	var full SplitHistogram
	if !p.valid() {
		p = Clean
	}
	B := presetLayouts[p].BlockSize
	nb := (len(src) + B - 1) / B
	dst = resize(dst, nb)
	for b := range dst {
		h := &dst[b]
		clear(h[:])
		h.add(src[b*B : min((b+1)*B, len(src))])
		for bin, c := range h {
			full[bin] += c
		}
	}
	return dst, full
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
		if own, ok := f.ownCodebook(&h, nonzeroBins(nil, &h), &cb); ok {
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
