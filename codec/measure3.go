package codec

// measureRows adds each value's code length to its stream's x, row by row
// (value c of row p goes to stream (c + p) mod 256), and counts exponents
// in hists unless it is nil (blocks whose exponents were counted with their
// codebooks' fits).
//
// Four neighbouring values of a row go to four neighbouring streams, so
// their lengths are added at once, as the 16-bit lanes of one word: lanes[r]
// holds, for rows p ≡ r mod 4, word w's lane i for stream (4w + r + i) mod
// 256. A lane's sum is one stream's bits in a block (at most 256 codes of
// at most 31 bits), far below 2^16.
func measureRows(x *[Streams]uint32, hists *[4]Histogram, block []uint16, table *[maxSymbols]uint32, shift uint, mask uint16) {
	var lanes [4][Streams / 4]uint64
	rows := len(block) / Streams
	for p := range rows {
		row := (*[Streams]uint16)(block[p*Streams : p*Streams+Streams])
		acc := &lanes[p&3]
		w0 := p >> 2
		for g := range Streams / 4 {
			r := (*[4]uint16)(row[4*g : 4*g+4])
			if hists != nil {
				hists[0][byte(r[0]>>7)]++
				hists[1][byte(r[1]>>7)]++
				hists[2][byte(r[2]>>7)]++
				hists[3][byte(r[3]>>7)]++
			}
			// A symbol is below maxSymbols (validate): the mask only spares
			// the bounds checks.
			l0 := uint64(table[int(r[0]&mask)>>shift&(maxSymbols-1)] & 31)
			l1 := uint64(table[int(r[1]&mask)>>shift&(maxSymbols-1)] & 31)
			l2 := uint64(table[int(r[2]&mask)>>shift&(maxSymbols-1)] & 31)
			l3 := uint64(table[int(r[3]&mask)>>shift&(maxSymbols-1)] & 31)
			acc[(w0+g)&(Streams/4-1)] += l0 | l1<<16 | l2<<32 | l3<<48
		}
	}
	for r := range lanes {
		for w, sum := range lanes[r] {
			for i := range 4 {
				x[(4*w+r+i)&(Streams-1)] += uint32(sum >> (16 * i) & 0xFFFF)
			}
		}
	}
	// A last, shorter row: one value at a time.
	turn := rows
	for c, v := range block[rows*Streams:] {
		if hists != nil {
			hists[0][byte(v>>7)]++
		}
		x[(c+turn)&(Streams-1)] += table[int(v&mask)>>shift] & 31
	}
}
