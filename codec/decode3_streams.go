package codec

import (
	"encoding/binary"
	"fmt"
)

// streamBufBytes holds the part of a stream's head and tail that its codes
// can reach: 256 codes of at most 16 bits take 512 bytes, so no lookup
// reads past byte 519 (heads are at most 512 bytes; the rest of a longer
// tail is not copied). A power of two, so that a masked offset stays
// inside.
const (
	streamBufBytes = 1024
	streamBufMask  = streamBufBytes - 1
)

// decodeBuf is one stream's bytes, with room for an 8-byte read at any
// masked offset.
type decodeBuf [streamBufBytes + 8]byte

// staging holds a block's values' symbol bits by position and stream until
// they join their residues: position p of stream j at p·256 + j of rows
// (the block's destination, whose full rows it covers), and those of a
// partial last row in last.
type staging struct {
	rows []uint16
	full int // the block's full rows
	last *[Streams]uint16
}

// put stages value v at position p of stream j.
func (s *staging) put(p, j int, v uint16) {
	if p < s.full {
		s.rows[p<<8|j] = v
		return
	}
	s.last[j] = v
}

// stream3 is one stream being decoded: its number, symbol count, tail
// units (L) and bits (avail); where its next code starts (pos) and its
// next position (p).
type stream3 struct {
	j, count, L int
	avail       int
	pos         uint
	p           int
}

// A stream's state in decodeFast and decodeOne is one word: its next
// position p in rows (p·256 + j) in the low 17 bits, the bit where its next
// code starts from bit stateShift; a lookup adds its entry's count and bits
// to both at once.
const (
	stateShift = 17
	posMask    = 1<<stateShift - 1
)

// decodeFast decodes four streams a lookup each in turn while every one has
// room for one more lookup of three symbols in the full rows: their lookups do not wait on
// each other, where one stream's each waits on the one before. It stops at
// an invalid code. It does not check a stream's bits against its end (the
// masked reads stay in its buffer): a stream whose codes end past them is
// decoded again by decodeExact, which names its fault.
func decodeFast(sts *[4]stream3, bufs *[4]decodeBuf, look *[1 << lookBits]lookEntry, sg *staging) {
	s0, s1, s2, s3 := &sts[0], &sts[1], &sts[2], &sts[3]
	// A lookup writes at most three positions, p..p+2, all in full rows.
	limit := uint64(max(min(s0.count, s1.count, s2.count, s3.count, sg.full)-2, 0)) << 8
	rows := sg.rows
	st0, st1, st2, st3 := s0.state(), s1.state(), s2.state(), s3.state()
	var wd, e, i uint64
	for max(st0&posMask, st1&posMask, st2&posMask, st3&posMask) < limit {
		// Stream 0.
		wd = binary.BigEndian.Uint64(bufs[0][st0>>(stateShift+3)&streamBufMask:]) << (st0 >> stateShift & 7)
		e = look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				goto done
			}
			e = withLiteral(e, wd)
		}
		i = st0 & posMask
		rows[i] = uint16(e >> entValues)
		rows[i+Streams] = uint16(e >> (entValues + 16))
		rows[i+2*Streams] = uint16(e >> (entValues + 32))
		st0 += (e & entAdvance) << 8
		// Stream 1.
		wd = binary.BigEndian.Uint64(bufs[1][st1>>(stateShift+3)&streamBufMask:]) << (st1 >> stateShift & 7)
		e = look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				goto done
			}
			e = withLiteral(e, wd)
		}
		i = st1 & posMask
		rows[i] = uint16(e >> entValues)
		rows[i+Streams] = uint16(e >> (entValues + 16))
		rows[i+2*Streams] = uint16(e >> (entValues + 32))
		st1 += (e & entAdvance) << 8
		// Stream 2.
		wd = binary.BigEndian.Uint64(bufs[2][st2>>(stateShift+3)&streamBufMask:]) << (st2 >> stateShift & 7)
		e = look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				goto done
			}
			e = withLiteral(e, wd)
		}
		i = st2 & posMask
		rows[i] = uint16(e >> entValues)
		rows[i+Streams] = uint16(e >> (entValues + 16))
		rows[i+2*Streams] = uint16(e >> (entValues + 32))
		st2 += (e & entAdvance) << 8
		// Stream 3.
		wd = binary.BigEndian.Uint64(bufs[3][st3>>(stateShift+3)&streamBufMask:]) << (st3 >> stateShift & 7)
		e = look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				goto done
			}
			e = withLiteral(e, wd)
		}
		i = st3 & posMask
		rows[i] = uint16(e >> entValues)
		rows[i+Streams] = uint16(e >> (entValues + 16))
		rows[i+2*Streams] = uint16(e >> (entValues + 32))
		st3 += (e & entAdvance) << 8
	}
done:
	s0.setState(st0)
	s1.setState(st1)
	s2.setState(st2)
	s3.setState(st3)
}

// state is the stream's state word (stateShift).
func (st *stream3) state() uint64 {
	return uint64(st.pos)<<stateShift | uint64(st.p<<8|st.j)
}

// setState sets the stream's position and bit from state word w.
func (st *stream3) setState(w uint64) {
	st.p = int(w&(1<<stateShift-1)) >> 8
	st.pos = uint(w >> stateShift)
}

// decodeOne decodes stream st alone, a lookup at a time, while it has room
// for one more lookup of three symbols in the full rows: where decodeFast left it behind the
// stream that stopped it. Like decodeFast it stops at an invalid code and
// leaves the check of the stream's end to its caller.
func (st *stream3) decodeOne(buf *decodeBuf, look *[1 << lookBits]lookEntry, sg *staging) {
	limit := uint64(max(min(st.count, sg.full)-2, 0)) << 8
	rows := sg.rows
	s := st.state()
	var i uint64
	for s&posMask < limit {
		wd := binary.BigEndian.Uint64(buf[s>>(stateShift+3)&streamBufMask:]) << (s >> stateShift & 7)
		e := look[wd>>(64-lookBits)]
		if e&(entEsc|entInvalid) != 0 {
			if e&entInvalid != 0 {
				break
			}
			e = withLiteral(e, wd)
		}
		i = s & posMask
		rows[i] = uint16(e >> entValues)
		rows[i+Streams] = uint16(e >> (entValues + 16))
		rows[i+2*Streams] = uint16(e >> (entValues + 32))
		s += (e & entAdvance) << 8
	}
	st.setState(s)
}

// finish decodes the rest of a stream's symbols, a lookup at a time; false
// at an invalid code or where the stream's bits end first.
func (st *stream3) finish(buf *decodeBuf, look *[1 << lookBits]lookEntry, sg *staging, cb *Codebook, shift uint) bool {
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
			e = withLiteral(e, wd)
		}
		n := entCount(e)
		if st.p+n <= st.count {
			st.pos = pos + entBits(e)
		} else {
			// The stream ends inside this lookup: only its first symbols
			// are the stream's.
			n = st.count - st.p
			for i := range n {
				st.pos += uint(cb.symCodeLen(uint32(entValue(e, i) >> shift)))
			}
		}
		for i := range n {
			sg.put(st.p+i, st.j, entValue(e, i))
		}
		st.p += n
	}
	return true
}

// exactLookBits is the window of the lookups whose starts the decoder's
// errors count: a lookup gives a code, and the next one too where both fit
// in the window. A stream with a fault is decoded again with them, so that
// an error names the same position however the fast path groups its codes.
const exactLookBits = 11

// decodeExact decodes stream st from its start, a lookup of exactLookBits
// at a time, checking each lookup's start against the stream's bits; it
// stops there, or returns the invalid code it meets.
func (st *stream3) decodeExact(buf *decodeBuf, look *[1 << lookBits]lookEntry, sg *staging) error {
	st.p, st.pos = 0, 0
	for st.p < st.count && st.pos <= uint(st.avail) {
		pos := st.pos
		wd := binary.BigEndian.Uint64(buf[pos>>3&streamBufMask:]) << (pos & 7)
		e := look[wd>>(64-lookBits)]
		if e&entInvalid != 0 {
			return fmt.Errorf("stream %d position %d: invalid code (prefix %08b)", st.j, st.p, wd>>56)
		}
		if e&entEsc != 0 {
			e = withLiteral(e, wd)
		}
		l1 := entLen(e)
		st.pos = pos + l1
		sg.put(st.p, st.j, entValue(e, 0))
		st.p++
		if e&entEsc != 0 {
			st.pos += literalBits
			continue
		}
		// The next code came with this one where both fit in the window;
		// the stream may end before it.
		next := look[wd<<l1>>(64-lookBits)]
		if l2 := entLen(next); next&(entEsc|entInvalid) == 0 && l1+l2 <= exactLookBits && st.p < st.count {
			sg.put(st.p, st.j, entValue(next, 0))
			st.p++
			st.pos += l2
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
