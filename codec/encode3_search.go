package codec

import "encoding/binary"

// With C searched (AUTO's capacities per block) a block is coded once:
// codeBlock packs its streams and keeps them, then, every block's C and
// place known, placeBlock lays them out.

// codeBlock packs block b's codes and residues, keeps the codes in the
// worker's coded (the streams one after another, each its bits' whole
// bytes) and searches the block's C; it settles its head capacity and
// tails, and counts the codes that spill past the heads.
func (s *encoder3) codeBlock(worker, b int) {
	t, l := s.dst, s.dst.Layout
	block, k, cb, ws := s.startBlock(worker, b)
	nbLen := len(block)

	table := (*[maxSymbols]uint32)(s.table(b))
	shift, mask := symbolShift(cb)
	x := (*[Streams]uint32)(s.x[b*Streams : (b+1)*Streams])
	coded := ws.coded
	k.codedBy, k.codedAt = worker, len(coded)
	for j0 := 0; j0 < Streams; j0 += 4 {
		var counts [4]int
		for q := range counts {
			counts[q] = l.StreamCount(nbLen, j0+q)
		}
		pos, out, escaped := packFour(&ws.bufs, block, j0, &counts, table, shift, mask, !s.counted)
		for q := range 4 {
			x[j0+q] = pos[q]
			k.codeBits += uint64(pos[q])
			if !s.counted {
				k.escaped += escaped[q]
			}
			coded = append(coded, ws.bufs[q][:out[q]]...)
		}
	}
	ws.coded = coded
	k.c = leastBytesV3(x, l, t.N, b)
	k.cbytes = l.scaledStreamBytes(t.N, b, k.c)
	k.unit, k.tailBits = blockTails(x, 8*k.cbytes)
	capBits := uint32(8 * k.cbytes)
	for j, bits := range x {
		if bits > capBits {
			k.spilled += spilledCodes(block, j, l.StreamCount(nbLen, j), bits, capBits, table, shift, mask)
		}
	}
}

// spilledCodes is how many of the count codes of stream j of block, bits
// in all, end past a head of capBits: from the last back while they do
// (position p of stream j is element p·256 + (j − p) mod 256).
func spilledCodes(block []uint16, j, count int, bits, capBits uint32, table *[maxSymbols]uint32, shift uint, mask uint16) int {
	spilled := 0
	for p := count - 1; p >= 0 && bits > capBits; p-- {
		spilled++
		bits -= table[int(block[p*Streams+int(uint8(j-p))]&mask)>>shift] & 31
	}
	return spilled
}

// placeBlock lays out block b's streams, coded by codeBlock: its heads,
// tail lengths and tails.
func (s *encoder3) placeBlock(worker, b int) {
	t := s.dst
	k := &s.blocks[b]
	area := t.Streams[k.areaStart : k.areaStart+Streams*k.cbytes]
	capBits := uint32(8 * k.cbytes)
	x := s.x[b*Streams : (b+1)*Streams]
	lens := t.TailLens[b*tailTableBytes : (b+1)*tailTableBytes]
	tail := t.Overflow[k.tailStart : k.tailStart+(k.tailBits+7)/8]
	tailPos := 0
	coded := s.scratch[k.codedBy].coded[k.codedAt:]
	var heads [4][]byte
	for j0 := 0; j0 < Streams; j0 += 4 {
		for q := range 4 {
			j := j0 + q
			n := int(x[j]+7) / 8
			stream := coded[:n]
			coded = coded[n:]
			if L := tailLen(int(x[j]), int(capBits), k.unit); L > 0 {
				k.tailed++
				putTailLen(lens, j, L)
				copyBits(tail, tailPos, stream, int(capBits), int(x[j]-capBits))
				tailPos += L << (k.unit - 1)
			}
			heads[q] = stream[:min(n, k.cbytes)]
		}
		putHeads(area, j0, k.cbytes, &heads, &s.scratch[worker].bufs)
	}
}

// putHeads writes streams j0..j0+3's heads into a block's stream area of
// cbytes per stream: each stream's first cbytes bytes (0 past its own),
// interleaved; the four streams' bytes of one offset are neighbours, one
// word. A head shorter than cbytes is padded in pad first.
func putHeads(area []byte, j0, cbytes int, heads *[4][]byte, pad *[4]streamBuf) {
	for q, h := range heads {
		if len(h) < cbytes {
			copy(pad[q][:], h)
			clear(pad[q][len(h):cbytes])
			heads[q] = pad[q][:cbytes]
		}
	}
	h0, h1, h2, h3 := heads[0][:cbytes], heads[1][:cbytes], heads[2][:cbytes], heads[3][:cbytes]
	for i := range h0 {
		binary.LittleEndian.PutUint32(area[i<<8|j0:], uint32(h0[i])|uint32(h1[i])<<8|uint32(h2[i])<<16|uint32(h3[i])<<24)
	}
}
