package codec

import (
	"encoding/binary"
	"fmt"
)

// The version 3 decoder reads a stream at a time: it gathers the stream's
// head and tail into one run of bytes, then looks up 11 bits at once in a
// table that gives up to two symbols (codes are at most 8 bits, and two
// short ones often fit).
const (
	lookBits = 11
	// Multi-symbol entry: first symbol | second << 11 | count << 22 |
	// bits << 24, or for an ESC (count 0) ESC t | its code length << 24 |
	// lookEsc; an invalid prefix is lookInvalid.
	lookEsc     = 1 << 29
	lookInvalid = 1 << 30
)

// decoder3 is a Decoder's state for format version 3.
type decoder3 struct {
	tailStarts []int // per block: where its tail region starts in Overflow
	look       []uint32
	codes      []uint16
	scratch    []decodeScratch3
}

// decodeScratch3 is one worker's scratch: four streams being decoded and
// the tables of a block with its own codebook.
type decodeScratch3 struct {
	st    [4]stream3
	look  []uint32
	codes []uint16
}

// stream3 is one stream being decoded: its bytes (head, then tail), its
// bits (avail, L units of tail), where its next code starts (pos; prev, the
// last lookup's start) and its symbols so far.
type stream3 struct {
	buf            []byte
	j, count, p, L int
	avail          int
	pos, prev      uint
	syms           [Streams + 1]uint16
}

// decodeInterleaved decodes four streams a lookup each in turn while every
// one has room for two more symbols: their lookups do not wait on each
// other, where one stream's each waits on the one before. Each stream's
// bit position and count stay in registers between its lookups, off the
// memory round trip a field would add to that wait. finish decodes what
// is left.
func decodeInterleaved(sts *[4]stream3, look []uint32, k uint, escMask uint32) {
	lookup := (*[1 << lookBits]uint32)(look)
	stop := min(sts[0].count, sts[1].count, sts[2].count, sts[3].count) - 1
	s0, s1, s2, s3 := &sts[0], &sts[1], &sts[2], &sts[3]
	b0, b1, b2, b3 := s0.buf, s1.buf, s2.buf, s3.buf
	a0, a1, a2, a3 := uint(s0.avail), uint(s1.avail), uint(s2.avail), uint(s3.avail)
	pos0, pos1, pos2, pos3 := s0.pos, s1.pos, s2.pos, s3.pos
	p0, p1, p2, p3 := s0.p, s1.p, s2.p, s3.p
	var wd uint64
	var e uint32
	var i int // < Streams: the symbol stores need no bounds checks
	for max(p0, p1, p2, p3) < stop && pos0 <= a0 && pos1 <= a1 && pos2 <= a2 && pos3 <= a3 {
		// Stream 0.
		wd = binary.BigEndian.Uint64(b0[pos0>>3:]) << (pos0 & 7)
		e = lookup[wd>>(64-lookBits)]
		i = p0 & (Streams - 1)
		if e&(3<<22) != 0 {
			s0.syms[i] = uint16(e & 0x7FF)
			s0.syms[i+1] = uint16(e >> 11 & 0x7FF)
			pos0 += uint(e >> 24 & 31)
			p0 += int(e >> 22 & 3)
		} else if e&lookEsc != 0 {
			l1 := uint(e >> 24 & 31)
			x := e & 0xFF
			s0.syms[i] = uint16((x>>k<<8|uint32(wd<<l1>>56))<<k | x&escMask)
			pos0 += l1 + literalBits
			p0++
		} else {
			break // an invalid code: finish names it
		}
		// Stream 1.
		wd = binary.BigEndian.Uint64(b1[pos1>>3:]) << (pos1 & 7)
		e = lookup[wd>>(64-lookBits)]
		i = p1 & (Streams - 1)
		if e&(3<<22) != 0 {
			s1.syms[i] = uint16(e & 0x7FF)
			s1.syms[i+1] = uint16(e >> 11 & 0x7FF)
			pos1 += uint(e >> 24 & 31)
			p1 += int(e >> 22 & 3)
		} else if e&lookEsc != 0 {
			l1 := uint(e >> 24 & 31)
			x := e & 0xFF
			s1.syms[i] = uint16((x>>k<<8|uint32(wd<<l1>>56))<<k | x&escMask)
			pos1 += l1 + literalBits
			p1++
		} else {
			break // an invalid code: finish names it
		}
		// Stream 2.
		wd = binary.BigEndian.Uint64(b2[pos2>>3:]) << (pos2 & 7)
		e = lookup[wd>>(64-lookBits)]
		i = p2 & (Streams - 1)
		if e&(3<<22) != 0 {
			s2.syms[i] = uint16(e & 0x7FF)
			s2.syms[i+1] = uint16(e >> 11 & 0x7FF)
			pos2 += uint(e >> 24 & 31)
			p2 += int(e >> 22 & 3)
		} else if e&lookEsc != 0 {
			l1 := uint(e >> 24 & 31)
			x := e & 0xFF
			s2.syms[i] = uint16((x>>k<<8|uint32(wd<<l1>>56))<<k | x&escMask)
			pos2 += l1 + literalBits
			p2++
		} else {
			break // an invalid code: finish names it
		}
		// Stream 3.
		wd = binary.BigEndian.Uint64(b3[pos3>>3:]) << (pos3 & 7)
		e = lookup[wd>>(64-lookBits)]
		i = p3 & (Streams - 1)
		if e&(3<<22) != 0 {
			s3.syms[i] = uint16(e & 0x7FF)
			s3.syms[i+1] = uint16(e >> 11 & 0x7FF)
			pos3 += uint(e >> 24 & 31)
			p3 += int(e >> 22 & 3)
		} else if e&lookEsc != 0 {
			l1 := uint(e >> 24 & 31)
			x := e & 0xFF
			s3.syms[i] = uint16((x>>k<<8|uint32(wd<<l1>>56))<<k | x&escMask)
			pos3 += l1 + literalBits
			p3++
		} else {
			break // an invalid code: finish names it
		}
	}
	s0.pos, s1.pos, s2.pos, s3.pos = pos0, pos1, pos2, pos3
	s0.p, s1.p, s2.p, s3.p = p0, p1, p2, p3
}

// finish decodes the rest of a stream's symbols, one lookup at a time.
func (st *stream3) finish(look []uint32, cb *Codebook, k uint, escMask uint32) error {
	lookup := (*[1 << lookBits]uint32)(look)
	for st.p < st.count {
		if st.pos > uint(st.avail) {
			break // past the stream's bits: the caller names it
		}
		pos := st.pos
		wd := binary.BigEndian.Uint64(st.buf[pos>>3:]) << (pos & 7)
		e := lookup[wd>>(64-lookBits)]
		st.prev = pos
		if e&(3<<22) == 0 {
			if e&lookEsc == 0 {
				return fmt.Errorf("stream %d position %d: invalid code (prefix %08b)", st.j, st.p, wd>>56)
			}
			l1 := uint(e >> 24 & 31)
			lit := uint32(wd << l1 >> 56)
			x := e & 0xFF
			st.syms[st.p] = uint16((x>>k<<8|lit)<<k | x&escMask)
			st.p++
			st.pos = pos + l1 + literalBits
			continue
		}
		st.syms[st.p] = uint16(e & 0x7FF)
		st.syms[st.p+1] = uint16(e >> 11 & 0x7FF)
		st.p += int(e >> 22 & 3)
		st.pos = pos + uint(e>>24&31)
	}
	if st.p > st.count {
		// The last lookup gave two symbols; the stream holds one more.
		st.p = st.count
		st.pos = st.prev + uint(cb.symCodeLen(uint32(st.syms[st.count-1])))
	}
	return nil
}

// lookTable fills t (2^11 entries) for codebook cb; codes is scratch.
func lookTable(t []uint32, cb *Codebook, codes *[]uint16) []uint32 {
	c := cb.symCode()
	var esc [1 << MaxSplit]uint16
	*codes, esc = c.codes(*codes)
	dt := c.decodeTable(*codes, esc)
	t = resize(t, 1<<lookBits)
	for x := range t {
		first := dt[x>>(lookBits-MaxCodeLen)]
		l1 := first.length()
		switch {
		case l1 == 0:
			t[x] = lookInvalid
			continue
		case uint32(first)&symEsc != 0:
			t[x] = uint32(first)&0xFF | l1<<24 | lookEsc
			continue
		}
		e := uint32(first)&0x7FF | 1<<22 | l1<<24
		if rest := lookBits - l1; rest >= 1 {
			second := dt[(x<<l1)&(1<<lookBits-1)>>(lookBits-MaxCodeLen)]
			if l2 := second.length(); l2 != 0 && l2 <= rest && uint32(second)&symEsc == 0 {
				e = uint32(first)&0x7FF | (uint32(second)&0x7FF)<<11 | 2<<22 | (l1+l2)<<24
			}
		}
		t[x] = e
	}
	return t
}

// decode3 decodes a version 3 tensor whose structure was checked.
func (d *Decoder) decode3(t *Tensor, dst []uint16) error {
	nb := t.Layout.Blocks(t.N)
	s := &d.v3
	s.look = lookTable(s.look, &t.Codebook, &s.codes)
	s.tailStarts = resize(s.tailStarts, nb+1)
	s.tailStarts[0] = 0
	for b := range nb {
		s.tailStarts[b+1] = s.tailStarts[b] + t.tailRegionBytes(b)
	}
	workers := workerCount(d.Workers, nb)
	if len(s.scratch) < workers {
		s.scratch = append(s.scratch, make([]decodeScratch3, workers-len(s.scratch))...)
	}
	d.starts = t.areaStarts(d.starts)
	d.blockErr = resize(d.blockErr, nb)
	clear(d.blockErr)
	d.t, d.dst = t, dst
	d.ps.runBlocks(d, workers, nb)
	d.t, d.dst = nil, nil
	for _, err := range d.blockErr {
		if err != nil {
			return err
		}
	}
	return nil
}

// TailRegionBytes is the bytes of block b's tail region in a version 3
// tensor (format.md §7.3), for a decoder that places the regions itself.
func (t *Tensor) TailRegionBytes(b int) int { return t.tailRegionBytes(b) }

// tailRegionBytes is the bytes of block b's tail region: its streams'
// tail lengths in units, padded to a byte.
func (t *Tensor) tailRegionBytes(b int) int {
	code := t.TailUnits[b]
	if code == 0 {
		return 0
	}
	lens := t.TailLens[b*tailTableBytes : (b+1)*tailTableBytes]
	units := 0
	for j := range Streams {
		units += getTailLen(lens, j)
	}
	return (units<<(code-1) + 7) / 8
}

// runBlock3 decodes block b of a version 3 tensor.
func (d *Decoder) runBlock3(worker, b int) {
	t := d.t
	s := &d.v3
	ws := &s.scratch[worker]
	l := t.Layout
	start := b * l.BlockSize
	nbLen := l.blockLen(t.N, b)
	dst := d.dst[start : start+nbLen]
	cb := t.blockCodebook(b)
	look := s.look
	if t.hasOwnCodebook(b) {
		ws.look = lookTable(ws.look, cb, &ws.codes)
		look = ws.look
	}
	k := uint(cb.Split)
	w := uint(ResidueBits(cb, l.Sign))
	shift := 7 - k
	// The symbols land in dst, in element order, and join the residues
	// there at the end in one pass over the block.
	sym := dst

	area := t.Streams[d.starts[b]:d.starts[b+1]]
	cbytes := len(area) / Streams
	capBits := 8 * cbytes
	code := t.TailUnits[b]
	lens := t.TailLens[b*tailTableBytes : (b+1)*tailTableBytes]
	tail := t.Overflow[s.tailStarts[b]:s.tailStarts[b+1]]
	maxTail := 0
	if code != 0 {
		for j := range Streams {
			maxTail = max(maxTail, getTailLen(lens, j))
		}
		maxTail <<= code - 1
	}
	// A stream's bytes, then 16 zero bytes so that a lookup may read past
	// them (a lookup starts at most at its stream's last bit, plus one
	// symbol's 16 bits in a round of decodeInterleaved).
	need := cbytes + (maxTail+7)/8 + 16
	for q := range ws.st {
		if cap(ws.st[q].buf) < need {
			ws.st[q].buf = make([]byte, need)
		}
		ws.st[q].buf = ws.st[q].buf[:need]
	}
	tailPos := 0
	longest := 0 // the longest tail's bits
	escMask := uint32(1)<<k - 1
	for j0 := 0; j0 < Streams; j0 += len(ws.st) {
		// Four neighbouring streams: their head bytes sit side by side.
		for q := range ws.st {
			st := &ws.st[q]
			clear(st.buf[cbytes:])
			st.j = j0 + q
			st.count = l.StreamCount(nbLen, st.j)
			st.pos, st.prev, st.p = 0, 0, 0
		}
		b0, b1, b2, b3 := ws.st[0].buf, ws.st[1].buf, ws.st[2].buf, ws.st[3].buf
		for i := range cbytes {
			h := area[i<<8|j0 : i<<8|j0+4 : i<<8|j0+4]
			b0[i], b1[i], b2[i], b3[i] = h[0], h[1], h[2], h[3]
		}
		for q := range ws.st {
			st := &ws.st[q]
			st.avail, st.L = capBits, 0
			if code != 0 {
				st.L = getTailLen(lens, st.j)
				if st.L > 0 {
					n := st.L << (code - 1)
					copyBits(st.buf, capBits, tail, tailPos, n)
					tailPos += n
					st.avail += n
				}
			}
		}
		decodeInterleaved(&ws.st, look, k, escMask)
		for q := range ws.st {
			st := &ws.st[q]
			if err := st.finish(look, cb, k, escMask); err != nil {
				d.blockErr[b] = fmt.Errorf("codec: decode: block %d %w", b, err)
				return
			}
			j, count, p := st.j, st.count, st.p
			used, L, avail := int(st.pos), st.L, st.avail
			switch {
			case p < count:
				d.blockErr[b] = fmt.Errorf("codec: decode: block %d stream %d: %d of its %d codes take more than the %d bits of its head and tail", b, j, p, count, avail)
				return
			case L == 0 && used > capBits:
				d.blockErr[b] = fmt.Errorf("codec: decode: block %d stream %d: its %d codes take %d bits, more than the %d of its head and no tail", b, j, count, used, capBits)
				return
			case L > 0 && (used > avail || used <= avail-1<<(code-1)):
				d.blockErr[b] = fmt.Errorf("codec: decode: block %d stream %d: its %d codes take %d bits, its head and tail of %d units hold %d..%d",
					b, j, count, used, L, avail-1<<(code-1)+1, avail)
				return
			}
			longest = max(longest, used-capBits)
		}
		placeSymbols(sym, &ws.st, shift)
	}
	unpackResidues(dst, sym, t.SF, start, k, w, l.Sign)
	if code != 0 && longest <= 0 {
		d.blockErr[b] = fmt.Errorf("codec: decode: block %d: tail unit code %d, but no stream's codes pass its head", b, code)
		return
	}
	if code > 1 && longest <= tailLenMax<<(code-2) {
		d.blockErr[b] = fmt.Errorf("codec: decode: block %d: tail unit of %d bits where %d would hold its longest tail (%d bits)", b, 1<<(code-1), 1<<(code-2), longest)
		return
	}
}

// placeSymbols puts the four streams' symbols, shifted, at their elements:
// position p of stream j holds element p·256 + (j − p) mod 256, so the four
// neighbouring streams' symbols of one position mostly share a cache line
// and go there together.
func placeSymbols(sym []uint16, sts *[4]stream3, shift uint) {
	j0 := sts[0].j
	s0, s1, s2, s3 := &sts[0].syms, &sts[1].syms, &sts[2].syms, &sts[3].syms
	// Whole rows only: a last, shorter row goes one symbol at a time.
	both := min(sts[0].count, sts[1].count, sts[2].count, sts[3].count, len(sym)/Streams)
	for p := range both {
		row := sym[p*Streams : p*Streams+Streams : p*Streams+Streams]
		c := uint8(j0 - p)
		row[c] = s0[p] << shift
		row[c+1] = s1[p] << shift
		row[c+2] = s2[p] << shift
		row[c+3] = s3[p] << shift
	}
	for q := range sts {
		st := &sts[q]
		for p := both; p < st.count; p++ {
			sym[p*Streams+int(uint8(st.j-p))] = st.syms[p] << shift
		}
	}
}

// symCodeLen is the code length of a symbol the codebook codes.
func (cb *Codebook) symCodeLen(s uint32) uint8 {
	if !cb.split() {
		return cb.Lengths[s]
	}
	return cb.SplitLengths[s]
}
