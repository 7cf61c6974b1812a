package codec

import (
	"encoding/binary"
	"fmt"
)

// decoder3 is a Decoder's state for format version 3.
type decoder3 struct {
	tailStarts []int // per block: where its tail region starts in Overflow
	look       []lookEntry
	residues   [256]uint16 // a residue's value bits
	scratch    []*decodeScratch3
}

// decodeScratch3 is one worker's scratch: four streams being decoded, the
// rows of staged symbols that the destination cannot hold, and the table
// of a block with its own codebook.
type decodeScratch3 struct {
	st   [4]stream3
	bufs [4]decodeBuf
	last [Streams]uint16 // a partial last row's staged symbols
	turn [Streams]uint16 // a staged row, while its place takes the values
	look []lookEntry
}

// decode3 decodes a version 3 tensor whose structure was checked.
func (d *Decoder) decode3(t *Tensor, dst []uint16) error {
	nb := t.Layout.Blocks(t.N)
	s := &d.v3
	k := uint(t.Codebook.Split)
	s.look = lookTable(s.look, &t.Codebook, 7-k)
	residueTable(&s.residues, k, uint(ResidueBits(&t.Codebook, t.Layout.Sign)), t.Layout.Sign)
	s.tailStarts = resize(s.tailStarts, nb+1)
	s.tailStarts[0] = 0
	for b := range nb {
		s.tailStarts[b+1] = s.tailStarts[b] + t.tailRegionBytes(b)
	}
	workers := workerCount(d.Workers, nb)
	for len(s.scratch) < workers {
		s.scratch = append(s.scratch, new(decodeScratch3))
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
	ws := s.scratch[worker]
	l := t.Layout
	start := b * l.BlockSize
	nbLen := l.blockLen(t.N, b)
	dst := d.dst[start : start+nbLen]
	cb := t.blockCodebook(b)
	k := uint(cb.Split)
	shift := 7 - k
	look := s.look
	if t.hasOwnCodebook(b) {
		ws.look = lookTable(ws.look, cb, shift)
		look = ws.look
	}
	lookup := (*[1 << lookBits]lookEntry)(look)

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
	// A stream's bytes, then 16 zero bytes that a lookup may read past them
	// (a checked lookup starts at most at its stream's last bit).
	need := min(cbytes+(maxTail+7)/8+16, streamBufBytes)
	// The symbols wait in the block's destination, by position, and join
	// their residues there at the end.
	full := nbLen / Streams
	sg := staging{rows: dst[:full*Streams], full: full, last: &ws.last}
	tailPos := 0
	longest := 0 // the longest tail's bits
	for j0 := 0; j0 < Streams; j0 += len(ws.st) {
		// Four neighbouring streams: their head bytes sit side by side.
		for q := range ws.st {
			st := &ws.st[q]
			clear(ws.bufs[q][cbytes:need])
			st.j = j0 + q
			st.count = l.StreamCount(nbLen, st.j)
			st.pos, st.p = 0, 0
		}
		gatherHeads(&ws.bufs, area, j0, cbytes)
		for q := range ws.st {
			st := &ws.st[q]
			st.avail, st.L = capBits, 0
			if code != 0 {
				st.L = getTailLen(lens, st.j)
				if st.L > 0 {
					n := st.L << (code - 1)
					copyTail(ws.bufs[q][:], cbytes, tail, tailPos, min(n, 8*(streamBufBytes-cbytes)))
					tailPos += n
					st.avail += n
				}
			}
		}
		decodeFast(&ws.st, &ws.bufs, lookup, &sg)
		for q := range ws.st {
			st := &ws.st[q]
			st.decodeOne(&ws.bufs[q], lookup, &sg)
			if !st.finish(&ws.bufs[q], lookup, &sg, cb, shift) || streamFault(st, capBits, code) {
				// Decode it again as the format counts its codes, to name
				// the fault.
				if err := st.decodeExact(&ws.bufs[q], lookup, &sg); err != nil {
					d.blockErr[b] = fmt.Errorf("codec: decode: block %d %w", b, err)
					return
				}
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
	}
	joinBlock(dst, &ws.last, &ws.turn, t.SF, start, uint(ResidueBits(cb, l.Sign)), &s.residues)
	if code != 0 && longest <= 0 {
		d.blockErr[b] = fmt.Errorf("codec: decode: block %d: tail unit code %d, but no stream's codes pass its head", b, code)
		return
	}
	if code > 1 && longest <= tailLenMax<<(code-2) {
		d.blockErr[b] = fmt.Errorf("codec: decode: block %d: tail unit of %d bits where %d would hold its longest tail (%d bits)", b, 1<<(code-1), 1<<(code-2), longest)
		return
	}
}

// gatherHeads puts the head bytes of streams j0..j0+3 (byte i of stream j
// at i·256 + j of the block's stream area) into their buffers.
func gatherHeads(bufs *[4]decodeBuf, area []byte, j0, cbytes int) {
	b0, b1, b2, b3 := &bufs[0], &bufs[1], &bufs[2], &bufs[3]
	area = area[j0:]
	for i := range min(cbytes, streamBufBytes) {
		if i<<8+4 > len(area) {
			break
		}
		v := binary.LittleEndian.Uint32(area[i<<8:])
		b0[i], b1[i], b2[i], b3[i] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
}

// copyTail copies n bits of src, from bit soff, into dst from byte at on
// (MSB-first), seven bytes a word at a time; dst's bytes there are 0, and
// dst holds 8 more bytes past them.
func copyTail(dst []byte, at int, src []byte, soff, n int) {
	for n >= 56 && soff/8+8 <= len(src) {
		binary.BigEndian.PutUint64(dst[at:], binary.BigEndian.Uint64(src[soff/8:])<<(soff%8))
		at += 7
		soff += 56
		n -= 56
	}
	if n > 0 && soff/8+8 <= len(src) {
		// The rest, and 0s after it (over the last word's eighth byte).
		v := binary.BigEndian.Uint64(src[soff/8:]) << (soff % 8)
		binary.BigEndian.PutUint64(dst[at:], v&^(1<<(64-n)-1))
		return
	}
	dst[at] = 0 // the last word's eighth byte
	copyBits(dst, 8*at, src, soff, n)
}

// streamFault says whether a decoded stream's codes end where its head and
// tail do not allow (format.md §7.3).
func streamFault(st *stream3, capBits int, code uint8) bool {
	used := int(st.pos)
	switch {
	case st.p < st.count:
		return true
	case st.L == 0:
		return used > capBits
	}
	return used > st.avail || used <= st.avail-1<<(code-1)
}
