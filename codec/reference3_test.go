package codec

// referenceEncode3 is a slow, literal transcription of format.md §1–§3 for
// format version 3, written apart from the fast encoder so that tests can
// compare their bytes: the codebooks (cbs: one per block, or one for all),
// each block's full-block C (caps) and the sign are given, as the encoder
// chose them.
func referenceEncode3(src []uint16, cb Codebook, cbs []Codebook, l Layout, caps []uint16) *Tensor {
	l = l.WithVersion(FormatVersion3)
	n := len(src)
	nb := l.Blocks(n)
	t := &Tensor{N: n, Layout: l, Codebook: cb, DerivedCodebook: cb.Dist != Empirical, BlockCodebooks: cbs,
		Streams: []byte{}, Overflow: []byte{}, TailUnits: []byte{}, TailLens: []byte{}}
	if l.PerBlock {
		t.BlockBytes = caps
	}
	k := uint(t.Codebook.Split)
	w := uint(ResidueBits(&t.Codebook, l.Sign))
	// Residues: value i's w bits at bit i·w.
	var resBits []byte
	for _, v := range src {
		sign := uint64(v >> 15)
		r := uint64(v) & (1<<(7-k) - 1)
		if l.Sign == SignMixed && !t.Codebook.Signed {
			r |= sign << (7 - k)
		}
		for i := int(w) - 1; i >= 0; i-- {
			resBits = append(resBits, byte(r>>uint(i)&1))
		}
	}
	t.SF = packBitList(resBits)
	for b := range nb {
		bcb := cb
		if len(cbs) > 0 && cbs[b].EscLen != 0 {
			bcb = cbs[b] // the block's own
		}
		c := bcb.symCode()
		codes, esc := c.codes(nil)
		start := b * l.BlockSize
		nbLen := min(l.BlockSize, n-start)
		m := (nbLen + 255) / 256
		C := l.StreamBytes
		if l.PerBlock {
			C = int(caps[b])
		}
		cbytes := (m*C*256 + l.BlockSize - 1) / l.BlockSize
		capBits := 8 * cbytes
		var streams [256][]byte // one entry per bit
		for j := range 256 {
			for p := range m {
				i := p*256 + ((j-p)%256+256)%256
				if i >= nbLen {
					continue
				}
				v := src[start+i]
				s := int(v&0x7FFF) >> (7 - k)
				if bcb.Signed {
					s = int(v) >> (7 - k)
				}
				var code uint32
				var length int
				if c.lens[s] != 0 {
					code, length = uint32(codes[s]), int(c.lens[s])
				} else {
					x := s>>(8+k)<<k | s&(1<<k-1) // the sign and fraction bits
					code, length = uint32(esc[x])<<8|uint32(s>>k&0xFF), int(c.esc[x])+8
				}
				for q := length - 1; q >= 0; q-- {
					streams[j] = append(streams[j], byte(code>>uint(q)&1))
				}
			}
		}
		area := make([]byte, 256*cbytes)
		longest := 0
		for j := range 256 {
			for i, bit := range streams[j] {
				if i < capBits {
					area[(i/8)*256+j] |= bit << (7 - i%8)
				}
			}
			longest = max(longest, len(streams[j])-capBits)
		}
		t.Streams = append(t.Streams, area...)
		unit := 0 // the smallest power of two u with longest <= 31u
		if longest > 0 {
			unit = 1
			for longest > 31*unit {
				unit *= 2
			}
		}
		lens := make([]byte, 160)
		var tailBits []byte
		code := uint8(0)
		if unit > 0 {
			for u := unit; u > 0; u >>= 1 {
				code++
			}
			for j := range 256 {
				tl := 0
				if extra := len(streams[j]) - capBits; extra > 0 {
					tl = (extra + unit - 1) / unit
					tailBits = append(tailBits, streams[j][capBits:]...)
					for range tl*unit - extra {
						tailBits = append(tailBits, 0)
					}
				}
				for q := 4; q >= 0; q-- {
					bit := 5*j + (4 - q)
					lens[bit/8] |= byte(tl>>uint(q)&1) << (7 - bit%8)
				}
			}
		}
		t.TailUnits = append(t.TailUnits, code)
		t.TailLens = append(t.TailLens, lens...)
		t.Overflow = append(t.Overflow, packBitList(tailBits)...)
	}
	return t
}

// packBitList packs one bit per entry, MSB-first, zero-padded to a byte.
func packBitList(bits []byte) []byte {
	out := make([]byte, (len(bits)+7)/8)
	for i, b := range bits {
		out[i/8] |= b << (7 - i%8)
	}
	return out
}
