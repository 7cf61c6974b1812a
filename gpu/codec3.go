package gpu

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"lcttop/codec"
)

// codec3 is a Codec's device state for format version 3 (kernels/lct.cu:
// lct_measure3, lct_encode3, lct_decode3): the sections of the tensor being
// coded, its tables and the encoder's counts.
type codec3 struct {
	res, heads, tails, blocks, lens, tables, status, desc Buffer
	x, esc, spill                                         Buffer // the encoder's counts per stream

	// Host staging, reused.
	blockTab         []uint64
	lensTab          []byte
	tabs             []uint32
	xs, escs, spills []uint32
}

// desc3Bytes is the size of struct Lct3Desc (kernels/lct.cu).
const desc3Bytes = 13 * 8

// tailTableBytes is a block's tail length table (format.md §7.3).
const tailTableBytes = 160

// decode3Smem is lct_decode3's shared memory: a decode table and 32
// scratch words.
const decode3Smem = 256*4 + 32*4

// codeTableWords is a version 3 code table's entries: the largest
// alphabet's symbols, 256 exponents times 8 (3 fraction bits, or 2 and the
// sign).
const codeTableWords = 2048

// measure3Smem and encode3Smem are lct_measure3's and lct_encode3's shared
// memory: a code table, and for the encoder 32 scratch words.
const (
	measure3Smem = 4 * codeTableWords
	encode3Smem  = 4*codeTableWords + 32*4
)

func (s *codec3) buffers() []*Buffer {
	return []*Buffer{&s.res, &s.heads, &s.tails, &s.blocks, &s.lens, &s.tables, &s.status, &s.desc, &s.x, &s.esc, &s.spill}
}

// free releases the device buffers.
func (s *codec3) free(d *Device) error {
	var first error
	for _, b := range s.buffers() {
		if err := d.Free(*b); err != nil && first == nil {
			first = err
		}
		*b = Buffer{}
	}
	return first
}

// decode3 decodes a version 3 tensor whose structure was checked on the
// device: one CTA a block, each reading its decode table, stream heads,
// tails and residues (lct_decode3).
func (c *Codec) decode3(t *codec.Tensor, dst []uint16) error {
	d := c.dev
	s := &c.v3
	nb := t.Layout.Blocks(t.N)
	w := codec.ResidueBits(&t.Codebook, t.Layout.Sign)
	sign := signMode(&t.Codebook, t.Layout)

	// Per block: C_b, the unit code and its decode table; where its heads
	// and its tail region start. Table 0 is the tensor's; a block with a
	// codebook of its own has the next.
	s.blockTab = resize(s.blockTab, 3*nb)
	s.lensTab = resize(s.lensTab, tailTableBytes*nb)
	clear(s.lensTab)
	tab := t.Codebook.SymbolDecodeTable()
	s.tabs = append(s.tabs[:0], tab[:]...)
	head, tail := 0, 0
	for b := range nb {
		cb := t.BlockStreamBytes(b)
		table := 0
		if b < len(t.BlockCodebooks) && t.BlockCodebooks[b].EscLen != 0 {
			table = len(s.tabs) / 256
			own := t.BlockCodebooks[b].SymbolDecodeTable()
			s.tabs = append(s.tabs, own[:]...)
		}
		unit := t.TailUnits[b]
		s.blockTab[3*b] = uint64(cb) | uint64(unit)<<16 | uint64(table)<<32
		s.blockTab[3*b+1] = uint64(head)
		s.blockTab[3*b+2] = uint64(tail)
		head += 256 * cb
		if unit != 0 {
			copy(s.lensTab[b*tailTableBytes:], t.TailLens[b*tailTableBytes:(b+1)*tailTableBytes])
			tail += t.TailRegionBytes(b)
		}
	}
	if head != len(t.Streams) || tail != len(t.Overflow) {
		return fmt.Errorf("gpu: decode: stream heads of %d bytes and tails of %d, the tables imply %d and %d", len(t.Streams), len(t.Overflow), head, tail)
	}

	return d.do(func() error {
		for _, g := range []struct {
			b     *Buffer
			bytes int
		}{
			{&s.res, len(t.SF)}, {&s.heads, len(t.Streams)}, {&s.tails, len(t.Overflow)},
			{&s.blocks, 8 * len(s.blockTab)}, {&s.lens, len(s.lensTab)}, {&s.tables, 4 * len(s.tabs)},
			{&s.status, 8}, {&s.desc, desc3Bytes}, {&c.vals, 2 * t.N},
		} {
			// A byte past every section: the kernel's reads of a residue
			// or tail byte may touch the one after the last.
			if err := d.grow(g.b, g.bytes+8, CodecScratch); err != nil {
				return err
			}
		}
		desc := s.descWords(t.N, t.Layout.BlockSize, nb, int(t.Codebook.Split), w, sign)
		status := ^uint64(0)
		for _, u := range []struct {
			b   Buffer
			src []byte
		}{
			{s.res, t.SF}, {s.heads, t.Streams}, {s.tails, t.Overflow},
			{s.blocks, u64Bytes(s.blockTab)}, {s.lens, s.lensTab}, {s.tables, u32Slice(s.tabs)},
			{s.status, u64Bytes([]uint64{status})}, {s.desc, u64Bytes(desc[:])},
		} {
			if err := d.htod(u.b, 0, u.src); err != nil {
				return err
			}
		}
		c.kernelMs.DecodeMs = 0
		if err := c.launchTimed(&c.kernelMs.DecodeMs, kDecode3, nb, decode3Smem, ptrArg(s.desc), ptrArg(c.vals)); err != nil {
			return err
		}
		if err := d.dtoh(Bytes(dst), c.vals, 0); err != nil {
			return err
		}
		var st [8]byte
		if err := d.dtoh(st[:], s.status, 0); err != nil {
			return err
		}
		return decodeError("tensor", binary.LittleEndian.Uint64(st[:]))
	})
}

// signMode is the kernels' sign field (Lct3Desc.sign): where the sign is
// (format.md §7.1).
func signMode(cb *codec.Codebook, l codec.Layout) uint64 {
	if cb.Signed {
		return 3
	}
	return uint64(l.Sign)
}

// descWords is the Lct3Desc of s's buffers for a tensor of n values.
func (s *codec3) descWords(n, blockSize, nb, split, w int, sign uint64) [desc3Bytes / 8]uint64 {
	return [desc3Bytes / 8]uint64{
		uint64(s.res.ptr), uint64(s.heads.ptr), uint64(s.tails.ptr), uint64(s.blocks.ptr), uint64(s.lens.ptr), uint64(s.tables.ptr), uint64(s.status.ptr),
		uint64(n), uint64(blockSize), uint64(nb), uint64(split), uint64(w), sign,
	}
}

// encode3 encodes src in format version 3 as codec.Encoder.Encode does: the
// device counts every stream's bits (lct_measure3), the host chooses each
// block's C and tail unit from them (codec.BlockHeads) and each block's
// codebook of its own (codec.BlockCodebooks, from src), and the device
// writes heads, tails and residues (lct_encode3).
func (c *Codec) encode3(dst *codec.Tensor, src []uint16, cb codec.Codebook, l codec.Layout) error {
	if len(src) > codec.MaxElements {
		return fmt.Errorf("gpu: encode: %d elements, at most %d allowed", len(src), codec.MaxElements)
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("gpu: encode: %w", err)
	}
	if err := cb.ValidateVersion(codec.FormatVersion3); err != nil {
		return fmt.Errorf("gpu: encode: %w", err)
	}
	if l.Sign != codec.SignMixed {
		if got := codec.SignOf(src); got != l.Sign && !(got == codec.SignPlus && len(src) == 0) {
			return fmt.Errorf("gpu: encode: layout says every sign is %v, the values' are %v", l.Sign, got)
		}
	}
	if l.BlockCodebooks && cb.Dist != codec.Empirical {
		return fmt.Errorf("gpu: encode: codebooks per block for a %s codebook (empirical only)", cb.Dist)
	}
	l = l.WithVersion(codec.FormatVersion3)
	d := c.dev
	s := &c.v3
	n := len(src)
	nb := l.Blocks(n)
	own := codec.BlockCodebooks(src, &cb, l)
	l.BlockCodebooks = own != nil
	w := codec.ResidueBits(&cb, l.Sign)
	sign := signMode(&cb, l)

	// Code tables: the tensor's, then each own codebook's.
	s.tabs = appendCodeTable(s.tabs[:0], &cb)
	s.blockTab = resize(s.blockTab, 3*nb)
	for b := range nb {
		table := 0
		if b < len(own) && own[b].EscLen != 0 {
			table = len(s.tabs) / codeTableWords
			s.tabs = appendCodeTable(s.tabs, &own[b])
		}
		s.blockTab[3*b] = uint64(table) << 32
	}
	s.xs = resize(s.xs, codec.Streams*nb)
	s.escs = resize(s.escs, codec.Streams*nb)
	s.spills = resize(s.spills, codec.Streams*nb)
	s.lensTab = resize(s.lensTab, tailTableBytes*nb)
	clear(s.lensTab)
	var caps []uint16
	if l.PerBlock {
		caps = make([]uint16, nb)
	}
	units := make([]byte, nb)
	var hist codec.Histogram
	err := d.do(func() error {
		for _, g := range []struct {
			b     *Buffer
			bytes int
		}{
			{&c.vals, 2 * n}, {&s.tables, 4 * len(s.tabs)}, {&s.blocks, 8 * len(s.blockTab)}, {&s.desc, desc3Bytes},
			{&s.x, 4 * len(s.xs)}, {&s.esc, 4 * len(s.escs)}, {&s.spill, 4 * len(s.spills)}, {&s.status, 8},
		} {
			if err := d.grow(g.b, g.bytes+8, CodecScratch); err != nil {
				return err
			}
		}
		desc := s.descWords(n, l.BlockSize, nb, int(cb.Split), w, sign)
		for _, u := range []struct {
			b   Buffer
			src []byte
		}{{c.vals, Bytes(src)}, {s.tables, u32Slice(s.tabs)}, {s.blocks, u64Bytes(s.blockTab)}, {s.desc, u64Bytes(desc[:])}} {
			if err := d.htod(u.b, 0, u.src); err != nil {
				return err
			}
		}
		c.kernelMs.EncodeMs = 0
		if err := c.launchTimed(&c.kernelMs.EncodeMs, kMeasure3, nb, measure3Smem, ptrArg(s.desc), ptrArg(c.vals), ptrArg(s.x), ptrArg(s.esc)); err != nil {
			return err
		}
		if err := d.dtoh(u32Slice(s.xs), s.x, 0); err != nil {
			return err
		}
		if err := d.dtoh(u32Slice(s.escs), s.esc, 0); err != nil {
			return err
		}

		// Each block's C, head bytes, tails and where its heads and tail
		// region go.
		head, tail := 0, 0
		for b := range nb {
			x := (*[codec.Streams]uint32)(s.xs[codec.Streams*b : codec.Streams*(b+1)])
			full, cbytes, unit, tailBytes := codec.BlockHeads(x, l, n, b, l.StreamBytes, l.PerBlock, s.lensTab[tailTableBytes*b:tailTableBytes*(b+1)])
			if caps != nil {
				caps[b] = uint16(full)
			}
			units[b] = unit
			s.blockTab[3*b] |= uint64(cbytes) | uint64(unit)<<16
			s.blockTab[3*b+1], s.blockTab[3*b+2] = uint64(head), uint64(tail)
			head += codec.Streams * cbytes
			tail += tailBytes
		}
		for _, g := range []struct {
			b     *Buffer
			bytes int
		}{{&s.res, (n*w + 7) / 8}, {&s.heads, head}, {&s.tails, tail}, {&s.lens, len(s.lensTab)}} {
			if err := d.grow(g.b, g.bytes+8, CodecScratch); err != nil {
				return err
			}
		}
		if err := d.drv.memset32(Ptr(s.tails.ptr), 0, s.tails.size/4); err != nil {
			return err
		}
		desc = s.descWords(n, l.BlockSize, nb, int(cb.Split), w, sign)
		for _, u := range []struct {
			b   Buffer
			src []byte
		}{{s.blocks, u64Bytes(s.blockTab)}, {s.lens, s.lensTab}, {s.desc, u64Bytes(desc[:])}} {
			if err := d.htod(u.b, 0, u.src); err != nil {
				return err
			}
		}
		if err := c.launchTimed(&c.kernelMs.EncodeMs, kEncode3, nb, encode3Smem, ptrArg(s.desc), ptrArg(c.vals), ptrArg(s.spill)); err != nil {
			return err
		}
		if err := d.fullHistogram(c.vals, n); err != nil {
			return err
		}
		dst.SF = resize(dst.SF, (n*w+7)/8)
		dst.Streams = resize(dst.Streams, head)
		dst.Overflow = resize(dst.Overflow, tail)
		for _, g := range []struct {
			dst []byte
			b   Buffer
		}{{dst.SF, s.res}, {dst.Streams, s.heads}, {dst.Overflow, s.tails}, {u32Slice(s.spills), s.spill}} {
			if err := d.dtoh(g.dst, g.b, 0); err != nil {
				return err
			}
		}
		return d.readHistogram(&hist)
	})
	if err != nil {
		return err
	}

	dst.N, dst.Codebook = n, cb
	dst.CompactCodebook, dst.DerivedCodebook = false, codec.DerivedCodebook(&cb, l)
	dst.Bitmaps, dst.Offsets = nil, nil
	dst.BlockCodebooks = own
	dst.BlockBytes = nil
	if l.PerBlock {
		dst.BlockBytes = caps
		l.StreamBytes = 0
		for _, c := range caps {
			l.StreamBytes = max(l.StreamBytes, int(c))
		}
		if err := l.Validate(); err != nil {
			return fmt.Errorf("gpu: encode: %w", err)
		}
	}
	dst.Layout = l
	dst.TailUnits = append(dst.TailUnits[:0], units...)
	dst.TailLens = append(dst.TailLens[:0], s.lensTab...)
	var codeBits uint64
	st := codec.Stats{Histogram: hist}
	for i, x := range s.xs {
		codeBits += uint64(x)
		st.Escaped += int(s.escs[i])
		st.Spilled += int(s.spills[i])
		if s.spills[i] != 0 {
			st.SpillingStreams++
		}
	}
	st.Finish(dst, codeBits)
	dst.Stats = st
	return nil
}

// appendCodeTable appends cb's code table, codeTableWords entries.
func appendCodeTable(dst []uint32, cb *codec.Codebook) []uint32 {
	t := cb.CodeTable()
	dst = append(dst, t...)
	return append(dst, make([]uint32, codeTableWords-len(t))...)
}

func u32Slice(v []uint32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
