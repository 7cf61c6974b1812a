package codec

import (
	"encoding/binary"
	"fmt"
)

// streamBufBytes holds a stream's head (at most 512 bytes) and tail (at
// most 31 units of 256 bits), and 16 zero bytes a lookup may read past
// them; a power of two, so that a masked offset stays inside.
const (
	streamBufBytes = 2048
	streamBufMask  = streamBufBytes - 1
)

// decodeBuf is one stream's bytes, with room for an 8-byte read at any
// masked offset.
type decodeBuf [streamBufBytes + 8]byte

// stagingRows holds a block's values' symbol bits by position and stream:
// position p of stream j at p·256 + j.
type stagingRows [Streams * Streams]uint16

// stream3 is one stream being decoded: its number, symbol count, tail
// units (L) and bits (avail); where its next code starts (pos) and its
// next position (p).
type stream3 struct {
	j, count, L int
	avail       int
	pos         uint
	p           int
}

// decodeFast decodes four streams a lookup each in turn while every one has
// room for one more lookup of three symbols: their lookups do not
// wait on each other, where one stream's each waits on the one before. It
// stops at an invalid code. It does not check a stream's bits against its
// end (the masked reads stay in its buffer): a stream whose codes end past
// them is decoded again by decodeExact, which names its fault.
func decodeFast(sts *[4]stream3, bufs *[4]decodeBuf, look *[1 << lookBits]lookEntry, rows *stagingRows) {
	s0, s1, s2, s3 := &sts[0], &sts[1], &sts[2], &sts[3]
	// A position in rows: p·256 + j; a lookup writes at most three.
	limit := (min(s0.count, s1.count, s2.count, s3.count) - 2) << 8
	x0, x1, x2, x3 := s0.p<<8|s0.j, s1.p<<8|s1.j, s2.p<<8|s2.j, s3.p<<8|s3.j
	pos0, pos1, pos2, pos3 := s0.pos, s1.pos, s2.pos, s3.pos
	var wd, e uint64
	for max(x0, x1, x2, x3) < limit {
		// Stream 0.
		wd = binary.BigEndian.Uint64(bufs[0][pos0>>3&streamBufMask:]) << (pos0 & 7)
		e = look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				goto done
			}
			e |= (wd << (e >> entLenShift & 15) >> 56) << 7
		}
		rows[uint16(x0)] = uint16(e)
		rows[uint16(x0+Streams)] = uint16(e >> 16)
		rows[uint16(x0+2*Streams)] = uint16(e >> 32)
		pos0 += uint(e >> entBitsShift & 31)
		x0 += int(e>>entCountShift&3) << 8
		// Stream 1.
		wd = binary.BigEndian.Uint64(bufs[1][pos1>>3&streamBufMask:]) << (pos1 & 7)
		e = look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				goto done
			}
			e |= (wd << (e >> entLenShift & 15) >> 56) << 7
		}
		rows[uint16(x1)] = uint16(e)
		rows[uint16(x1+Streams)] = uint16(e >> 16)
		rows[uint16(x1+2*Streams)] = uint16(e >> 32)
		pos1 += uint(e >> entBitsShift & 31)
		x1 += int(e>>entCountShift&3) << 8
		// Stream 2.
		wd = binary.BigEndian.Uint64(bufs[2][pos2>>3&streamBufMask:]) << (pos2 & 7)
		e = look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				goto done
			}
			e |= (wd << (e >> entLenShift & 15) >> 56) << 7
		}
		rows[uint16(x2)] = uint16(e)
		rows[uint16(x2+Streams)] = uint16(e >> 16)
		rows[uint16(x2+2*Streams)] = uint16(e >> 32)
		pos2 += uint(e >> entBitsShift & 31)
		x2 += int(e>>entCountShift&3) << 8
		// Stream 3.
		wd = binary.BigEndian.Uint64(bufs[3][pos3>>3&streamBufMask:]) << (pos3 & 7)
		e = look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				goto done
			}
			e |= (wd << (e >> entLenShift & 15) >> 56) << 7
		}
		rows[uint16(x3)] = uint16(e)
		rows[uint16(x3+Streams)] = uint16(e >> 16)
		rows[uint16(x3+2*Streams)] = uint16(e >> 32)
		pos3 += uint(e >> entBitsShift & 31)
		x3 += int(e>>entCountShift&3) << 8
	}
done:
	s0.pos, s1.pos, s2.pos, s3.pos = pos0, pos1, pos2, pos3
	s0.p, s1.p, s2.p, s3.p = x0>>8, x1>>8, x2>>8, x3>>8
}

// decodeOne decodes stream st alone, a lookup at a time, while it has room
// for one more lookup of three symbols: where decodeFast left it behind the
// stream that stopped it. Like decodeFast it stops at an invalid code and
// leaves the check of the stream's end to its caller.
func (st *stream3) decodeOne(buf *decodeBuf, look *[1 << lookBits]lookEntry, rows *stagingRows) {
	limit := (st.count - 2) << 8
	x, pos := st.p<<8|st.j, st.pos
	for x < limit {
		wd := binary.BigEndian.Uint64(buf[pos>>3&streamBufMask:]) << (pos & 7)
		e := look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				break
			}
			e |= (wd << (e >> entLenShift & 15) >> 56) << 7
		}
		rows[uint16(x)] = uint16(e)
		rows[uint16(x+Streams)] = uint16(e >> 16)
		rows[uint16(x+2*Streams)] = uint16(e >> 32)
		pos += uint(e >> entBitsShift & 31)
		x += int(e>>entCountShift&3) << 8
	}
	st.p, st.pos = x>>8, pos
}

// finish decodes the rest of a stream's symbols, a lookup at a time; false
// at an invalid code or where the stream's bits end first.
func (st *stream3) finish(buf *decodeBuf, look *[1 << lookBits]lookEntry, rows *stagingRows, cb *Codebook, shift uint) bool {
	for st.p < st.count {
		if st.pos > uint(st.avail) {
			return false
		}
		pos := st.pos
		wd := binary.BigEndian.Uint64(buf[pos>>3&streamBufMask:]) << (pos & 7)
		e := look[wd>>(64-lookBits)]
		if e&entInvalid != 0 {
			return false
		}
		if e&entEsc != 0 {
			e |= (wd << (e >> entLenShift & 15) >> 56) << 7
		}
		n := int(e >> entCountShift & 3)
		if st.p+n <= st.count {
			st.pos = pos + uint(e>>entBitsShift&31)
		} else {
			// The stream ends inside this lookup: only its first symbols
			// are the stream's.
			n = st.count - st.p
			for i := range n {
				st.pos += uint(cb.symCodeLen(uint32(uint16(e>>(16*i)) >> shift)))
			}
		}
		for i := range n {
			rows[(st.p+i)<<8|st.j] = uint16(e >> (16 * i))
		}
		st.p += n
	}
	return true
}

// exactLookBits is the window of the lookups whose starts the format's
// errors count: one gives a code, and the next one too where both fit in
// it, as the decoder always has. A stream with a fault is decoded again
// with them, so that an error names the same position however the fast
// path groups its codes.
const exactLookBits = 11

// decodeExact decodes stream st from its start, a lookup of exactLookBits
// at a time, checking each lookup's start against the stream's bits; it
// stops there, or returns the invalid code it meets.
func (st *stream3) decodeExact(buf *decodeBuf, look *[1 << lookBits]lookEntry, rows *stagingRows, cb *Codebook, shift uint) error {
	st.p, st.pos = 0, 0
	for st.p < st.count && st.pos <= uint(st.avail) {
		pos := st.pos
		wd := binary.BigEndian.Uint64(buf[pos>>3&streamBufMask:]) << (pos & 7)
		e := look[wd>>(64-lookBits)]
		if e&entInvalid != 0 {
			return fmt.Errorf("stream %d position %d: invalid code (prefix %08b)", st.j, st.p, wd>>56)
		}
		if e&entEsc != 0 {
			e |= (wd << (e >> entLenShift & 15) >> 56) << 7
		}
		l1 := uint(e >> entLenShift & 15)
		st.pos = pos + l1
		if e&entEsc != 0 {
			st.pos += literalBits
		}
		rows[st.p<<8|st.j] = uint16(e)
		st.p++
		if e>>entCountShift&3 >= 2 {
			if l2 := uint(cb.symCodeLen(uint32(uint16(e>>16) >> shift))); l1+l2 <= exactLookBits {
				// The second code came with the first; the stream may end
				// before it.
				if st.p < st.count {
					rows[st.p<<8|st.j] = uint16(e >> 16)
					st.p++
					st.pos += l2
				}
			}
		}
	}
	return nil
}

// symCodeLen is the code length of a symbol the codebook codes.
func (cb *Codebook) symCodeLen(s uint32) uint8 {
	if !cb.split() {
		return cb.Lengths[s]
	}
	return cb.SplitLengths[s]
}
