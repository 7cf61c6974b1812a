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

// decodeScratch3 is one worker's scratch: a stream's bytes and the tables
// of a block with its own codebook.
type decodeScratch3 struct {
	buf   []byte
	look  []uint32
	codes []uint16
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
	unpackResidues(dst, t.SF, start, k, w, l.Sign)
	shift := 7 - k

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
	// A stream's bytes, then 8 zero bytes so that a lookup may read past them.
	need := cbytes + (maxTail+7)/8 + 8
	if cap(ws.buf) < need {
		ws.buf = make([]byte, need)
	}
	buf := ws.buf[:need]
	tailPos := 0
	longest := 0 // the longest tail's bits
	escMask := uint32(1)<<k - 1
	for j := range Streams {
		clear(buf[cbytes:])
		for i := range cbytes {
			buf[i] = area[i<<8|j]
		}
		avail := capBits
		L := 0
		if code != 0 {
			L = getTailLen(lens, j)
			if L > 0 {
				n := L << (code - 1)
				copyBits(buf, capBits, tail, tailPos, n)
				tailPos += n
				avail += n
			}
		}
		count := l.StreamCount(nbLen, j)
		pos := uint(0)
		p := 0
		// put writes the symbol at position p of stream j.
		put := func(sym uint32) {
			i := p*Streams + (j-p)&(Streams-1)
			dst[i] |= uint16(sym) << shift
			p++
		}
		for p < count {
			if pos > uint(avail) {
				break // past the stream's bits: the check below names it
			}
			wd := binary.BigEndian.Uint64(buf[pos>>3:]) << (pos & 7)
			e := look[wd>>(64-lookBits)]
			switch n := e >> 22 & 3; {
			case n == 2 && p+1 < count:
				put(e & 0x7FF)
				put(e >> 11 & 0x7FF)
				pos += uint(e >> 24 & 31)
			case n != 0:
				put(e & 0x7FF)
				pos += uint(cb.symCodeLen(e & 0x7FF))
			case e&lookEsc != 0:
				l1 := uint(e >> 24 & 31)
				lit := uint32(wd << l1 >> 56)
				x := e & 0xFF
				put((x>>k<<8|lit)<<k | x&escMask)
				pos += l1 + literalBits
			default:
				d.blockErr[b] = fmt.Errorf("codec: decode: block %d stream %d position %d: invalid code (prefix %08b)", b, j, p, wd>>56)
				return
			}
		}
		used := int(pos)
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
	if code != 0 && longest <= 0 {
		d.blockErr[b] = fmt.Errorf("codec: decode: block %d: tail unit code %d, but no stream's codes pass its head", b, code)
		return
	}
	if code > 1 && longest <= tailLenMax<<(code-2) {
		d.blockErr[b] = fmt.Errorf("codec: decode: block %d: tail unit of %d bits where %d would hold its longest tail (%d bits)", b, 1<<(code-1), 1<<(code-2), longest)
		return
	}
}

// symCodeLen is the code length of a symbol the codebook codes.
func (cb *Codebook) symCodeLen(s uint32) uint8 {
	if !cb.split() {
		return cb.Lengths[s]
	}
	return cb.SplitLengths[s]
}
