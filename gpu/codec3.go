package gpu

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"lcttop/codec"
)

// codec3 is a Codec's device state for format version 3 (kernels/lct.cu,
// lct_decode3): the sections of the tensor being coded and its tables.
type codec3 struct {
	res, heads, tails, blocks, lens, tables, status, desc Buffer

	// Host staging, reused.
	blockTab []uint64
	lensTab  []byte
	tabs     []uint32
}

// desc3Bytes is the size of struct Lct3Desc (kernels/lct.cu).
const desc3Bytes = 13 * 8

// tailTableBytes is a block's tail length table (format.md §7.3).
const tailTableBytes = 160

// decode3Smem is lct_decode3's shared memory: a decode table and 32
// scratch words.
const decode3Smem = 256*4 + 32*4

func (s *codec3) buffers() []*Buffer {
	return []*Buffer{&s.res, &s.heads, &s.tails, &s.blocks, &s.lens, &s.tables, &s.status, &s.desc}
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
	sign := uint64(t.Layout.Sign)
	if t.Codebook.Signed {
		sign = 3
	}

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
		var desc [desc3Bytes / 8]uint64
		desc[0], desc[1], desc[2] = uint64(s.res.ptr), uint64(s.heads.ptr), uint64(s.tails.ptr)
		desc[3], desc[4], desc[5], desc[6] = uint64(s.blocks.ptr), uint64(s.lens.ptr), uint64(s.tables.ptr), uint64(s.status.ptr)
		desc[7], desc[8], desc[9] = uint64(t.N), uint64(t.Layout.BlockSize), uint64(nb)
		desc[10], desc[11], desc[12] = uint64(t.Codebook.Split), uint64(w), sign
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
		if err := d.launch(kDecode3, nb, threads, decode3Smem, ptrArg(s.desc), ptrArg(c.vals)); err != nil {
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

func u32Slice(v []uint32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
