package gpu

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"lcttop/codec"
)

// Tensor is an LCT tensor in device memory: the sections of a codec.Tensor
// in buffers of their own, the encoder's per-block scratch, and its status
// words. Its shape (N and layout) is fixed; its codebook may change.
type Tensor struct {
	Name string // names the tensor in errors

	dev    *Device
	alloc  Allocator // where the sections' memory comes from (nil: dev itself)
	n      int
	layout codec.Layout
	caps   []uint16 // each block's C where layout.PerBlock
	cb     codec.Codebook
	cat    Category

	sf, streams, bitmaps, offsets, overflow Buffer
	tables, spill, bstats, look, desc       Buffer
	blockTab                                Buffer // where layout.PerBlock: per block C_b and its area's offset / 256
	ovCap                                   int
	slot                                    int

	// The status as of the last SyncStatus (or Download, or StatusRead),
	// and which read of the device's (or host-side reset) it came from.
	ovLen, decodeErr uint64
	statusSeq        uint64
	// decodeSeq is the status read count when a decode of t was last
	// queued: a read numbered above it reports that decode's errors.
	decodeSeq uint64
	decoded   bool // a decode of t has been queued (decodeSeq means something)
	freed     bool
	// retired: freed with a decode no status read has reported yet; it
	// keeps its status slot until one does (see settleRetired).
	retired bool
}

// descBytes is the size of struct LctDesc (kernels/lct.cu).
const descBytes = 16 * 8

// NewTensor allocates an LCT tensor of n elements with the given layout and
// codebook, its sections accounted to cat and its overflow buffer, holding
// overflowCap bytes, to OverflowPool. Its contents are undefined until an
// encode, a fused step or Upload writes them.
// A layout with capacities per block is refused: such tensors come from
// Codec, which knows their blocks' capacities, or NewTensorBlocks.
func (d *Device) NewTensor(n int, l codec.Layout, cb codec.Codebook, overflowCap int, cat Category) (*Tensor, error) {
	if l.PerBlock {
		return nil, fmt.Errorf("gpu: new tensor: a layout with capacities per block needs their table (gpu.Codec encodes such tensors)")
	}
	return d.newTensor(nil, n, l, cb, overflowCap, cat)
}

// newTensor is NewTensor with the sections taken from a (nil: d's own
// allocations).
func (d *Device) newTensor(a Allocator, n int, l codec.Layout, cb codec.Codebook, overflowCap int, cat Category) (*Tensor, error) {
	return d.newTensorBlocks(a, n, l, nil, cb, overflowCap, cat)
}

// NewTensorBlocks is NewTensor for a layout with capacities per block
// (l.PerBlock), caps holding each block's (codec.BlockCapacities).
func (d *Device) NewTensorBlocks(n int, l codec.Layout, caps []uint16, cb codec.Codebook, overflowCap int, cat Category) (*Tensor, error) {
	return d.newTensorBlocks(nil, n, l, caps, cb, overflowCap, cat)
}

// newTensorBlocks is newTensor with the blocks' capacities where l.PerBlock.
func (d *Device) newTensorBlocks(a Allocator, n int, l codec.Layout, caps []uint16, cb codec.Codebook, overflowCap int, cat Category) (*Tensor, error) {
	if n < 0 || n > codec.MaxElements {
		return nil, fmt.Errorf("gpu: new tensor: %d elements, want 0..%d", n, codec.MaxElements)
	}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("gpu: new tensor: %w", err)
	}
	if err := cb.Validate(); err != nil {
		return nil, fmt.Errorf("gpu: new tensor: %w", err)
	}
	if overflowCap < 0 {
		return nil, fmt.Errorf("gpu: new tensor: overflow capacity %d", overflowCap)
	}
	t := &Tensor{dev: d, cat: cat, alloc: a}
	err := d.do(func() error {
		if err := t.reshape(n, l, caps, overflowCap); err != nil {
			t.release()
			return err
		}
		return t.setCodebook(cb)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// N is the number of elements.
func (t *Tensor) N() int { return t.n }

// Layout is the tensor's layout.
func (t *Tensor) Layout() codec.Layout { return t.layout }

// Codebook is the codebook the tensor is (or will be) encoded with.
func (t *Tensor) Codebook() codec.Codebook { return t.cb }

// OverflowCap is the overflow buffer's size in bytes.
func (t *Tensor) OverflowCap() int { return t.ovCap }

// OverflowLen is the overflow length the last encode produced, as of the
// last SyncStatus or Download.
func (t *Tensor) OverflowLen() int { return int(t.ovLen) }

// StoredBytes is the tensor's serialised size (format.md §5), as of the last
// SyncStatus or Download.
func (t *Tensor) StoredBytes() int {
	nb := t.layout.Blocks(t.n)
	return t.hostShape().HeaderBytes() + 2*len(t.caps) + t.n + t.streamAreaBytes() + 36*nb + int(t.ovLen)
}

// HeaderBytes is the serialised header's size, codebook included: the
// part of StoredBytes that stays on the host.
func (t *Tensor) HeaderBytes() int { return t.hostShape().HeaderBytes() }

// DeviceBytes is what t occupies in device memory as the format counts it
// (StoredBytes without the header).
func (t *Tensor) DeviceBytes() int64 { return int64(t.StoredBytes() - t.HeaderBytes()) }

// hostShape is a host tensor with t's shape and codebook, for the codec's
// geometry and header size.
func (t *Tensor) hostShape() *codec.Tensor {
	return &codec.Tensor{N: t.n, Layout: t.layout, BlockBytes: t.caps, Codebook: t.cb,
		CompactCodebook: codec.CompactCodebook(&t.cb, t.layout), DerivedCodebook: codec.DerivedCodebook(&t.cb, t.layout)}
}

func (t *Tensor) streamAreaBytes() int {
	if !t.layout.PerBlock {
		return t.layout.StreamAreaBytes(t.n)
	}
	return t.hostShape().StreamAreaBytes()
}

func (t *Tensor) label() string {
	if t.Name != "" {
		return t.Name
	}
	return fmt.Sprintf("tensor of %d elements", t.n)
}

// SetCodebook sets the codebook the next encode into t uses.
func (t *Tensor) SetCodebook(cb codec.Codebook) error {
	if err := cb.Validate(); err != nil {
		return fmt.Errorf("gpu: %s: %w", t.label(), err)
	}
	return t.dev.do(func() error { return t.setCodebook(cb) })
}

func (t *Tensor) setCodebook(cb codec.Codebook) error {
	tab := t.dev.tablesFor(&cb)
	if err := t.dev.htod(t.tables, 0, unsafe.Slice((*byte)(unsafe.Pointer(&tab[0])), len(tab)*4)); err != nil {
		return err
	}
	t.cb = cb
	return nil
}

// GrowOverflow makes the overflow buffer hold at least bytes (its contents
// are lost: run the encode again).
func (t *Tensor) GrowOverflow(bytes int) error {
	return t.dev.do(func() error { return t.growOverflow(bytes) })
}

func (t *Tensor) growOverflow(bytes int) error {
	if bytes <= t.ovCap {
		return nil
	}
	if err := t.grow(&t.overflow, bytes, OverflowPool); err != nil {
		return err
	}
	t.ovCap = bytes
	return t.writeDesc()
}

// lookBytes is the encoder's look-back state of nb blocks (kernels/lct.cu,
// lookback): a word per block, then its ticket counter and epoch.
func lookBytes(nb int) int { return 8 * (nb + 1) }

// reshape (re)allocates the sections for n elements in layout l, keeping
// buffers that are large enough; caps are the blocks' capacities where
// l.PerBlock, else nil.
func (t *Tensor) reshape(n int, l codec.Layout, caps []uint16, ovCap int) error {
	if v := l.FormatVersion(); v != codec.FormatVersion2 {
		return fmt.Errorf("gpu: %s: the kernels code format version %d only, not version %d", t.label(), codec.FormatVersion2, v)
	}
	l = l.Normalized()
	shape := &codec.Tensor{N: n, Layout: l, BlockBytes: caps}
	if err := shape.CheckBlockBytes(); err != nil {
		return fmt.Errorf("gpu: %s: %w", t.label(), err)
	}
	d := t.dev
	nb := l.Blocks(n)
	var table []uint32
	if l.PerBlock {
		table = make([]uint32, 2*nb)
		start := 0 // block b's stream area, in units of 256 bytes
		for b := range nb {
			c := shape.BlockStreamBytes(b)
			table[2*b], table[2*b+1] = uint32(c), uint32(start)
			start += c
		}
	}
	if !t.desc.Valid() {
		s, err := d.status.take(t)
		if err != nil {
			return err
		}
		t.slot = s
	}
	sizes := []struct {
		b    *Buffer
		size int
		cat  Category
	}{
		{&t.sf, n, t.cat},
		{&t.streams, shape.StreamAreaBytes(), t.cat},
		{&t.bitmaps, 32 * nb, t.cat},
		{&t.offsets, 4 * nb, t.cat},
		{&t.overflow, ovCap, OverflowPool},
		{&t.tables, 512 * 4, CodecScratch},
		{&t.spill, 256 * nb, CodecScratch},
		{&t.bstats, 16 * nb, CodecScratch},
		{&t.look, lookBytes(nb), CodecScratch},
		{&t.desc, descBytes, CodecScratch},
	}
	taken := false
	for _, s := range sizes {
		took, err := t.take(s.b, s.size, s.cat)
		if err != nil {
			return err
		}
		taken = taken || took
	}
	if len(table) > 0 {
		took, err := t.take(&t.blockTab, 4*len(table), CodecScratch)
		if err != nil {
			return err
		}
		taken = taken || took
	}
	if taken {
		if err := t.afterDefault(); err != nil {
			return err
		}
	}
	if len(table) > 0 {
		if err := d.htod(t.blockTab, 0, u32Bytes(table)); err != nil {
			return err
		}
	}
	// No look-back word of an encode yet, ticket counter and epoch 0.
	if err := t.dev.drv.memset32(Ptr(t.look.ptr), 0, lookBytes(nb)/4); err != nil {
		return err
	}
	t.n, t.layout, t.ovCap = n, l, max(ovCap, t.overflow.size)
	t.caps = append(t.caps[:0], caps...)
	if !l.PerBlock {
		t.caps = nil
	}
	t.ovLen, t.decodeErr = 0, noError
	t.statusFromHost()
	if err := t.setStatus(0); err != nil {
		return err
	}
	return t.writeDesc()
}

// writeDesc uploads struct LctDesc.
func (t *Tensor) writeDesc() error {
	var b [descBytes]byte
	fields := []uint64{
		uint64(t.sf.ptr), uint64(t.streams.ptr), uint64(t.bitmaps.ptr), uint64(t.offsets.ptr), uint64(t.overflow.ptr),
		uint64(t.tables.ptr), uint64(t.spill.ptr), uint64(t.bstats.ptr), uint64(t.dev.status.ptr(t.slot)),
		uint64(t.n), uint64(t.layout.BlockSize), uint64(t.layout.StreamBytes), uint64(t.layout.Blocks(t.n)), uint64(t.ovCap),
		uint64(t.look.ptr), 0,
	}
	if t.layout.PerBlock {
		fields[len(fields)-1] = uint64(t.blockTab.ptr)
	}
	for i, f := range fields {
		binary.LittleEndian.PutUint64(b[8*i:], f)
	}
	return t.dev.htod(t.desc, 0, b[:])
}

// setStatus writes the status words: the overflow length, no error, no
// finished blocks.
func (t *Tensor) setStatus(ovLen uint64) error {
	var b [statusBytes]byte
	binary.LittleEndian.PutUint64(b[:], ovLen)
	binary.LittleEndian.PutUint64(b[8:], noError)
	return t.dev.htod(t.dev.status.buf, statusBytes*t.slot, b[:])
}

// clearError resets the decode error word before a decode reads t.
func (t *Tensor) clearError() error {
	t.markDecoded()
	return t.dev.drv.memset32(Ptr(t.dev.status.ptr(t.slot)+8), 0xFFFFFFFF, 2)
}

// settleRetired reports the decode error of retired t found by a status
// read (its words w) and gives its slot back.
func (t *Tensor) settleRetired(w []byte) error {
	t.decodeErr = binary.LittleEndian.Uint64(w[8:])
	t.retired = false
	if t.dev.status.owner[t.slot] == t {
		t.dev.status.release(t.slot)
	}
	return decodeError(t.label(), t.decodeErr)
}

// readStatus reads t's status words alone (waiting for the device).
func (t *Tensor) readStatus() error {
	var b [16]byte
	if err := t.dev.dtoh(b[:], t.dev.status.buf, statusBytes*t.slot); err != nil {
		return err
	}
	t.ovLen = binary.LittleEndian.Uint64(b[:])
	t.decodeErr = binary.LittleEndian.Uint64(b[8:])
	t.statusFromHost()
	return nil
}

// statusFromHost marks t's status fields newer than any status read queued
// so far (they were just read, or set by the host with the words).
func (t *Tensor) statusFromHost() {
	t.dev.statusSeq++
	t.statusSeq = t.dev.statusSeq
}

// Free releases the tensor's device memory.
func (t *Tensor) Free() error {
	return t.dev.do(t.release)
}

func (t *Tensor) release() error {
	if t.freed {
		return nil
	}
	var first error
	for _, b := range []*Buffer{&t.sf, &t.streams, &t.bitmaps, &t.offsets, &t.overflow, &t.tables, &t.spill, &t.bstats, &t.look, &t.desc, &t.blockTab} {
		if err := t.free(*b); err != nil && first == nil {
			first = err
		}
		*b = Buffer{}
	}
	if t.dev.status.owner[t.slot] == t {
		if t.decoded && t.decodeSeq >= t.statusSeq {
			// A decode queued since the last status read: its slot waits
			// for the next read, which reports what the decode found.
			t.retired = true
		} else {
			t.dev.status.release(t.slot)
		}
	}
	t.freed = true
	return first
}

// Upload copies a host tensor into t, which must have the same N and layout.
// The caller vouches for ct's consistency (ParseTensor checks it; Decode on
// the device reports what it finds wrong at SyncStatus).
func (t *Tensor) Upload(ct *codec.Tensor) error {
	if ct.N != t.n || ct.Layout != t.layout || !slices.Equal(ct.BlockBytes, t.caps) {
		return fmt.Errorf("gpu: upload into %s: host tensor has %d elements in %+v, device tensor %d in %+v",
			t.label(), ct.N, ct.Layout, t.n, t.layout)
	}
	return t.dev.do(func() error { return t.upload(ct) })
}

func (t *Tensor) upload(ct *codec.Tensor) error {
	d := t.dev
	if err := t.growOverflow(len(ct.Overflow)); err != nil {
		return err
	}
	if err := t.setCodebook(ct.Codebook); err != nil {
		return err
	}
	for _, c := range []struct {
		dst Buffer
		src []byte
	}{{t.sf, ct.SF}, {t.streams, ct.Streams}, {t.bitmaps, ct.Bitmaps}, {t.offsets, u32Bytes(ct.Offsets)}, {t.overflow, ct.Overflow}} {
		if err := d.htod(c.dst, 0, c.src); err != nil {
			return fmt.Errorf("gpu: upload %s: %w", t.label(), err)
		}
	}
	t.ovLen = uint64(len(ct.Overflow))
	t.statusFromHost()
	return t.setStatus(t.ovLen)
}

// Download copies t into a host tensor, reusing dst's slices where they are
// large enough. It waits for the device, and fails with an OverflowError if
// the last encode's spill did not fit. Stats are left zero (see
// codec.Tensor.ComputeStats).
func (t *Tensor) Download(dst *codec.Tensor) error {
	return t.dev.do(func() error {
		if err := t.readStatus(); err != nil {
			return err
		}
		if t.ovLen > uint64(t.ovCap) {
			return &OverflowError{Tensor: t.label(), Needed: int(t.ovLen), Holds: t.ovCap}
		}
		return t.download(dst)
	})
}

func (t *Tensor) download(dst *codec.Tensor) error {
	nb := t.layout.Blocks(t.n)
	dst.N, dst.Layout, dst.Codebook = t.n, t.layout, t.cb
	dst.CompactCodebook = codec.CompactCodebook(&t.cb, t.layout)
	dst.DerivedCodebook = codec.DerivedCodebook(&t.cb, t.layout)
	dst.BlockBytes = nil
	if t.layout.PerBlock {
		dst.BlockBytes = append(dst.BlockBytes[:0], t.caps...)
	}
	dst.SF = resize(dst.SF, t.n)
	dst.Streams = resize(dst.Streams, t.streamAreaBytes())
	dst.Bitmaps = resize(dst.Bitmaps, 32*nb)
	dst.Offsets = resize(dst.Offsets, nb)
	dst.Overflow = resize(dst.Overflow, int(t.ovLen))
	dst.Stats = codec.Stats{}
	d := t.dev
	for _, c := range []struct {
		dst []byte
		src Buffer
	}{{dst.SF, t.sf}, {dst.Streams, t.streams}, {dst.Bitmaps, t.bitmaps}, {u32Bytes(dst.Offsets), t.offsets}, {dst.Overflow, t.overflow}} {
		if err := d.dtoh(c.dst, c.src, 0); err != nil {
			return fmt.Errorf("gpu: download %s: %w", t.label(), err)
		}
	}
	return nil
}

func u32Bytes(v []uint32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// resize returns s with length n, reusing its array when large enough (as
// codec's encoder does, so that results compare equal slice for slice).
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// buildTables makes the kernels' decode and encode tables (kernels/lct.cu).
// Decode, by the next 8 bits, a field a byte: exponent | advance<<8 | code
// length<<16 | flags<<24, the advance being the code length (+8 for ESC and
// its literal), flag bit 0 ESC, bit 7 an invalid prefix (advancing 8).
// Encode, by exponent: the code (ESC and the literal for an escaped
// exponent, at most 16 bits) left-aligned in the top bits | length.
func buildTables(cb *codec.Codebook) [512]uint32 {
	var tab [512]uint32
	for i, e := range cb.DecodeTable() {
		switch {
		case e.Len == 0:
			tab[i] = 0x80<<24 | 8<<8
		case e.Symbol == 256:
			tab[i] = 1<<24 | uint32(e.Len)<<16 | uint32(e.Len+8)<<8
		default:
			tab[i] = uint32(e.Len)<<16 | uint32(e.Len)<<8 | uint32(e.Symbol)
		}
	}
	codes, esc := cb.Codes()
	for x, l := range cb.Lengths {
		code, n := uint32(codes[x]), uint32(l)
		if l == 0 {
			code, n = uint32(esc)<<8|uint32(x), uint32(cb.EscLen)+8
		}
		tab[256+x] = code<<(32-n) | n
	}
	return tab
}

// markDecoded records that a decode of t is queued: the next status read
// reports what it found.
func (t *Tensor) markDecoded() { t.decodeSeq, t.decoded = t.dev.statusSeq, true }
