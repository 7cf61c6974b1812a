package codec

// referenceEncode is a slow, literal transcription of format.md §3 (either
// version's stream mapping, as l says), written apart from the fast encoder
// so that tests can compare their bytes.
func referenceEncode(src []uint16, cb Codebook, l Layout) *Tensor {
	var caps []uint16
	if l.PerBlock {
		caps = BlockCapacities(&cb, l, src)
		l.StreamBytes = 0
		for _, c := range caps {
			l.StreamBytes = max(l.StreamBytes, int(c))
		}
	}
	return referenceEncodeBlocks(src, cb, l, caps)
}

// referenceEncodeBlocks is referenceEncode with block b's full-block C
// caps[b] where l.PerBlock.
func referenceEncodeBlocks(src []uint16, cb Codebook, l Layout, caps []uint16) *Tensor {
	l = l.Normalized()
	n := len(src)
	t := &Tensor{N: n, Layout: l, Codebook: cb, CompactCodebook: cb.Dist == Empirical && l.FormatVersion() == FormatVersion2 && compactOK(&cb), DerivedCodebook: cb.Dist != Empirical && !l.v1(), BlockBytes: caps, SF: []byte{}, Streams: []byte{}, Bitmaps: []byte{}, Offsets: []uint32{}, Overflow: []byte{}}
	for _, v := range src {
		sf, _ := Split(v)
		t.SF = append(t.SF, sf)
	}
	codes, esc := cb.Codes()
	for b := 0; b*l.BlockSize < n; b++ {
		start := b * l.BlockSize
		nb := min(l.BlockSize, n-start)
		m := (nb + 255) / 256
		c := l.StreamBytes
		if l.PerBlock {
			c = int(caps[b])
		}
		cbytes := (m*c*256 + l.BlockSize - 1) / l.BlockSize
		area := make([]byte, 256*cbytes)
		var bitmap [32]byte
		var markers, spilled []byte
		// element is the block-relative index at position p of stream j.
		element := func(j, p int) int {
			if l.v1() {
				return p*256 + j
			}
			return p*256 + ((j-p)%256+256)%256
		}
		for j := range 256 {
			count := 0
			for p := range m {
				if element(j, p) < nb {
					count = p + 1
				}
			}
			var bitsOut []byte // one entry per bit
			coded := count
			for p := range count {
				_, e := Split(src[start+element(j, p)])
				var code uint32
				var length int
				if cb.Lengths[e] != 0 {
					code, length = uint32(codes[e]), int(cb.Lengths[e])
				} else {
					code, length = uint32(esc)<<8|uint32(e), int(cb.EscLen)+8
				}
				if len(bitsOut)+length > 8*cbytes {
					coded = p
					break
				}
				for i := length - 1; i >= 0; i-- {
					bitsOut = append(bitsOut, byte(code>>i&1))
				}
			}
			for i, bit := range bitsOut {
				area[(i/8)*256+j] |= bit << (7 - i%8)
			}
			if coded < count {
				bitmap[j/8] |= 1 << (j % 8)
				markers = append(markers, byte(count-coded))
				for p := coded; p < count; p++ {
					_, e := Split(src[start+element(j, p)])
					spilled = append(spilled, e)
				}
			}
		}
		t.Streams = append(t.Streams, area...)
		t.Bitmaps = append(t.Bitmaps, bitmap[:]...)
		t.Offsets = append(t.Offsets, uint32(len(t.Overflow)))
		t.Overflow = append(t.Overflow, markers...)
		t.Overflow = append(t.Overflow, spilled...)
	}
	return t
}

// compactOK: the codebook codes a range of exponents whose lengths, two a
// byte after the range's two bounds, take fewer than 128 bytes.
func compactOK(cb *Codebook) bool {
	lo, hi := -1, -1
	for e, l := range cb.Lengths {
		if l != 0 {
			if lo < 0 {
				lo = e
			}
			hi = e
		}
	}
	return lo >= 0 && 2+(hi-lo+2)/2 < 128
}
