package lctfile

import "hash/crc32"

// The CRC-32C of two runs of bytes joined follows from the CRCs of each
// and the second's length (as zlib's crc32_combine): the first's CRC
// shifted by that many zero bytes, a product modulo the polynomial, then
// XORed with the second's. Workers checksum the pieces they code, and the
// writer joins the pieces' CRCs into the segment's.

// multModP is a·b modulo the Castagnoli polynomial, in its reflected form.
func multModP(a, b uint32) uint32 {
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				return p
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ crc32.Castagnoli
		} else {
			b >>= 1
		}
	}
}

// x2n[k] is x^(2^k) modulo the polynomial.
var x2n = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// crc32Combine is the CRC-32C of a followed by b, from crcA, crcB and
// len(b).
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	p := uint32(1) << 31                           // x^0
	for k := 3; lenB > 0; lenB, k = lenB>>1, k+1 { // 8·lenB bits: x^(2^3) a byte
		if lenB&1 != 0 {
			p = multModP(x2n[k&31], p)
		}
	}
	return multModP(p, crcA) ^ crcB
}
