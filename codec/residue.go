package codec

import (
	"encoding/binary"
	"fmt"
)

// Sign says whether every value of a tensor has one sign (format version 3,
// format.md §1): then the header holds it and no value stores it.
type Sign uint8

// The sign modes, numbered as in the header's residue byte.
const (
	SignMixed Sign = iota // each value's residue holds its sign
	SignPlus              // every sign bit is 0 (Adam's v, squares, norms)
	SignMinus             // every sign bit is 1
)

var signNames = [...]string{"mixed", "plus", "minus"}

func (s Sign) String() string {
	if int(s) < len(signNames) {
		return signNames[s]
	}
	return fmt.Sprintf("sign(%d)", uint8(s))
}

func (s Sign) valid() bool { return int(s) < len(signNames) }

// SignOf is SignPlus when no value of src has its sign bit set, SignMinus
// when every one has, else SignMixed. An empty tensor is SignPlus.
func SignOf(src []uint16) Sign {
	and, or := uint16(0xFFFF), uint16(0)
	i := 0
	for ; i+4 <= len(src); i += 4 {
		s := src[i : i+4 : i+4]
		and &= s[0] & s[1] & s[2] & s[3]
		or |= s[0] | s[1] | s[2] | s[3]
		if and>>15 == 0 && or>>15 != 0 {
			return SignMixed
		}
	}
	for ; i < len(src); i++ {
		and &= src[i]
		or |= src[i]
	}
	switch {
	case or>>15 == 0:
		return SignPlus
	case and>>15 != 0 && len(src) > 0:
		return SignMinus
	}
	return SignMixed
}

// MaxSplit is the most fraction bits a version 3 symbol carries beside the
// exponent (format.md §1).
const MaxSplit = 3

// ResidueBits is W, the bits each value of sign s stores as they are
// under codebook cb in format version 3: the 7 fraction bits less those its
// symbols hold, and the sign where values differ in it and the symbols do
// not hold it (format.md §1).
func ResidueBits(cb *Codebook, s Sign) int {
	w := 7 - int(cb.Split)
	if s == SignMixed && !cb.Signed {
		w++
	}
	return w
}

// residueBytes is the size of n residues of w bits, packed.
func residueBytes(n, w int) int { return (n*w + 7) / 8 }

// residueOf is value v's residue of w bits under split k: the low 7 − k
// fraction bits, with the sign above them when w = 8 − k.
func residueOf(v uint16, k uint, w uint) uint64 {
	r := uint64(v) & (1<<(7-k) - 1)
	if w == 8-k {
		r |= uint64(v>>15) << (7 - k)
	}
	return r
}

// packResidues writes the residues of src (w bits each, MSB-first, value i
// at bit i·w) into dst, which holds residueBytes(len(src), w) bytes.
func packResidues(dst []byte, src []uint16, k, w uint) {
	low := uint64(1)<<(7-k) - 1
	// With the sign kept, it sits right above the low bits: v >> (15 − (7 − k))
	// brings it there, and signMask keeps it alone.
	var signMask uint64
	if w == 8-k {
		signMask = 1 << (7 - k)
	}
	sh := 8 + k
	i, out := packResidueGroups(dst, src, low, signMask, sh, w)
	var acc uint64
	var n uint
	for ; i < len(src); i++ {
		v := src[i]
		acc = acc<<w | uint64(v)&low | uint64(v>>sh)&signMask
		n += w
		for n >= 8 {
			n -= 8
			dst[out] = byte(acc >> n)
			out++
		}
	}
	if n > 0 {
		dst[out] = byte(acc << (8 - n))
	}
}

// packResidueGroups is packResidues eight values at a time while a whole
// 8-byte store fits in dst, and how far it got in src and dst. Eight values
// make w bytes; one store writes them (the bytes past the group are
// written again by the next). Four values' residues at a time are the low
// and sign bits of a 64-bit word of them, joined in pairs of lanes, then
// the two pairs. Its own function, with every shift below 64 in sight, so
// that the loop keeps its values in registers.
func packResidueGroups(dst []byte, src []uint16, low, signMask uint64, sh, w uint) (i, out int) {
	const lanes = 0x0001000100010001
	const halves = 0x0000FFFF0000FFFF
	keep := (low | signMask<<(sh&63)) * lanes
	lowBits, signBits := low*lanes, signMask*lanes
	sh &= 63
	w &= 15
	pair, group, top := 2*w, 4*w, (64-8*w)&63
	if signMask == 0 { // no sign kept: the low bits alone
		for ; i+8 <= len(src) && out+8 <= len(dst); i += 8 {
			s := (*[8]uint16)(src[i : i+8])
			a := (uint64(s[0]) | uint64(s[1])<<16 | uint64(s[2])<<32 | uint64(s[3])<<48) & lowBits
			c := (uint64(s[4]) | uint64(s[5])<<16 | uint64(s[6])<<32 | uint64(s[7])<<48) & lowBits
			a = (a&halves)<<w | a>>16&halves
			c = (c&halves)<<w | c>>16&halves
			a = (a&0xFFFFFFFF)<<pair | a>>32
			c = (c&0xFFFFFFFF)<<pair | c>>32
			binary.BigEndian.PutUint64(dst[out:], (a<<group|c)<<top)
			out += int(w)
		}
		return i, out
	}
	for ; i+8 <= len(src) && out+8 <= len(dst); i += 8 {
		s := (*[8]uint16)(src[i : i+8])
		a := (uint64(s[0]) | uint64(s[1])<<16 | uint64(s[2])<<32 | uint64(s[3])<<48) & keep
		c := (uint64(s[4]) | uint64(s[5])<<16 | uint64(s[6])<<32 | uint64(s[7])<<48) & keep
		// Move each lane's sign down beside its low bits.
		a = a&lowBits | a>>sh&signBits
		c = c&lowBits | c>>sh&signBits
		a = (a&halves)<<w | a>>16&halves
		c = (c&halves)<<w | c>>16&halves
		a = (a&0xFFFFFFFF)<<pair | a>>32
		c = (c&0xFFFFFFFF)<<pair | c>>32
		binary.BigEndian.PutUint64(dst[out:], (a<<group|c)<<top)
		out += int(w)
	}
	return i, out
}

// readBits reads n <= 32 bits at bit offset off of b (MSB-first); bits past
// b read as 0.
func readBits(b []byte, off, n uint) uint64 {
	var acc uint64
	at := int(off / 8)
	for i := 0; i < 5; i++ {
		acc <<= 8
		if at+i < len(b) {
			acc |= uint64(b[at+i])
		}
	}
	return acc >> (40 - n - off%8) & (1<<n - 1)
}
