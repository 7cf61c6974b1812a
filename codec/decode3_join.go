package codec

import (
	"encoding/binary"
	"math/bits"
)

// joinBlock writes a block's values: element p·256 + c is the symbol bits
// of stream (c + p) mod 256 at position p (format.md §3), staged by
// position in dst itself (at p·256 + (c + p) mod 256) or, for a partial last
// row, in last, joined with the bits of its residue (res holds the tensor's
// residues of w bits; the block's first element is value first). rv gives
// a residue's value bits, by its low w bits; turn is scratch for a row.
func joinBlock(dst []uint16, last, turn *[Streams]uint16, res []byte, first int, w uint, rv *[256]uint16) {
	full := len(dst) / Streams
	for p := range full {
		row := dst[p*Streams : p*Streams+Streams : p*Streams+Streams]
		copy(turn[:], row)
		at := (first + p*Streams) * int(w) / 8 // a row's residues start at a byte
		if at+Streams*int(w)/8+8 > len(res) {
			joinRest(row, turn, p, res, first+p*Streams, w, rv)
			continue
		}
		joinRow(row, turn, uint8(p), res[at:at+Streams*int(w)/8+8], w, rv)
	}
	if rest := len(dst) - full*Streams; rest > 0 {
		joinRest(dst[full*Streams:], last, full, res, first+full*Streams, w, rv)
	}
}

// joinRow joins one full row, turned by p, eight values (w bytes of
// residues) at a time; res holds 8 bytes past the row's residues. Each
// value's residue comes to the low bits of a word turned left by w, and rv
// reads only those.
func joinRow(row []uint16, staged *[Streams]uint16, p uint8, res []byte, w uint, rv *[256]uint16) {
	row = row[:Streams]
	if w == 8 {
		joinRowBytes(row, staged, p, res, rv)
		return
	}
	rot := int(w)
	at := 0
	for c := 0; c < Streams; c += 8 {
		a := binary.BigEndian.Uint64(res[at:])
		at += rot
		d := row[c : c+8 : c+8]
		o := int(uint8(c) + p)
		if o <= Streams-8 {
			y := staged[o : o+8 : o+8]
			a = bits.RotateLeft64(a, rot)
			d[0] = rv[uint8(a)] | y[0]
			a = bits.RotateLeft64(a, rot)
			d[1] = rv[uint8(a)] | y[1]
			a = bits.RotateLeft64(a, rot)
			d[2] = rv[uint8(a)] | y[2]
			a = bits.RotateLeft64(a, rot)
			d[3] = rv[uint8(a)] | y[3]
			a = bits.RotateLeft64(a, rot)
			d[4] = rv[uint8(a)] | y[4]
			a = bits.RotateLeft64(a, rot)
			d[5] = rv[uint8(a)] | y[5]
			a = bits.RotateLeft64(a, rot)
			d[6] = rv[uint8(a)] | y[6]
			a = bits.RotateLeft64(a, rot)
			d[7] = rv[uint8(a)] | y[7]
			continue
		}
		for i := range 8 {
			a = bits.RotateLeft64(a, rot)
			d[i] = rv[uint8(a)] | staged[uint8(o+i)]
		}
	}
}

// joinRowBytes is joinRow for residues of 8 bits: a byte each.
func joinRowBytes(row []uint16, staged *[Streams]uint16, p uint8, res []byte, rv *[256]uint16) {
	row = row[:Streams]
	res = res[:Streams]
	for c := 0; c < Streams; c += 8 {
		d := row[c : c+8 : c+8]
		r := res[c : c+8 : c+8]
		o := int(uint8(c) + p)
		if o <= Streams-8 {
			y := staged[o : o+8 : o+8]
			d[0] = rv[r[0]] | y[0]
			d[1] = rv[r[1]] | y[1]
			d[2] = rv[r[2]] | y[2]
			d[3] = rv[r[3]] | y[3]
			d[4] = rv[r[4]] | y[4]
			d[5] = rv[r[5]] | y[5]
			d[6] = rv[r[6]] | y[6]
			d[7] = rv[r[7]] | y[7]
			continue
		}
		for i := range 8 {
			d[i] = rv[r[i]] | staged[uint8(o+i)]
		}
	}
}

// joinRest joins the values of a row one at a time: a partial last row, or
// one whose residues end the section.
func joinRest(row []uint16, staged *[Streams]uint16, p int, res []byte, first int, w uint, rv *[256]uint16) {
	bit := uint(first) * w
	for c := range row {
		row[c] = rv[uint8(readBits(res, bit, w))] | staged[uint8(c+p)]
		bit += w
	}
}
