package gpu

import (
	"errors"
	"fmt"

	"lcttop/codec"
)

// This file lets a caller that manages device memory of its own (the CUDA
// trainer's accounted pool, on the same primary context) use the codec on
// it: tensors whose sections come from the caller's allocator, dense values
// at the caller's addresses, histograms into the caller's buffers, and the
// status read without failing on the overflows the caller re-encodes.

// Allocator hands out device memory for a tensor's sections in place of the
// Device's own allocation: cat says what the section holds (the tensor's
// category for its encoded sections, OverflowPool for the overflow buffer,
// CodecScratch for the encoder's tables and scratch). Memory from an
// Allocator is neither counted in Device.Memory nor freed by the Device; a
// tensor gives it back through Free when it grows or is freed.
//
// On the side stream (side.go), memory from an Allocator may have been used
// by the default stream until it was handed out: the device orders its work
// on a section after the default stream's work queued when it took it; and
// an Allocator that is also a SideAllocator learns, when a section goes
// back, the side stream's point after every use of it.
type Allocator interface {
	Alloc(bytes int, cat Category) (Ptr, error)
	Free(p Ptr, cat Category)
}

// SideAllocator is an Allocator that takes back sections the side stream
// may still be using: up to point (see Device.Point).
type SideAllocator interface {
	Allocator
	FreeAfter(p Ptr, cat Category, point uint64)
}

// ShrinkAllocator is an Allocator that can keep the head of a section and
// take back the rest in place (TrimOverflow).
type ShrinkAllocator interface {
	Allocator
	// Shrink keeps the first bytes of the section at p and takes back the
	// rest; false where it cannot, the section then unchanged.
	Shrink(p Ptr, bytes int, cat Category) bool
}

// NewTensorIn is NewTensor with the sections' memory taken from a.
func (d *Device) NewTensorIn(a Allocator, n int, l codec.Layout, cb codec.Codebook, overflowCap int, cat Category) (*Tensor, error) {
	if a == nil {
		return nil, errors.New("gpu: new tensor: nil allocator")
	}
	return d.newTensor(a, n, l, cb, overflowCap, cat)
}

// External is a Buffer over bytes of device memory at ptr that the caller
// owns (allocated on this device's context by other means): it can be
// encoded from, decoded into and histogrammed, never freed through Device.
func External(p Ptr, bytes int) Buffer {
	return Buffer{ptr: p, size: bytes, cat: CodecScratch}
}

// grow makes *b hold at least bytes, from t's allocator or the device.
func (t *Tensor) grow(b *Buffer, bytes int, cat Category) error {
	taken, err := t.take(b, bytes, cat)
	if err != nil || !taken {
		return err
	}
	return t.afterDefault()
}

// take is grow without ordering the side stream after the default stream:
// it reports whether it took memory from t's allocator, which the caller
// must then order (afterDefault) before queueing work on it. A tensor's
// sections, taken together, so wait for the default stream once.
func (t *Tensor) take(b *Buffer, bytes int, cat Category) (bool, error) {
	if t.alloc == nil {
		return false, t.dev.grow(b, bytes, cat)
	}
	if b.Valid() && b.size >= bytes {
		return false, nil
	}
	if err := t.free(*b); err != nil {
		return false, err
	}
	*b = Buffer{}
	p, err := t.alloc.Alloc(max(bytes, 1), cat)
	if err != nil {
		return false, fmt.Errorf("gpu: %s: %d bytes of %s: %w", t.label(), bytes, cat, err)
	}
	*b = Buffer{ptr: p, size: bytes, cat: cat}
	return true, nil
}

// afterDefault orders the side stream's later work after the default
// stream's work queued so far, which may have used memory t just took.
func (t *Tensor) afterDefault() error {
	if !t.dev.side.on {
		return nil
	}
	if err := t.dev.drv.afterDefault(); err != nil {
		return fmt.Errorf("gpu: %s: side stream after the default stream: %w", t.label(), err)
	}
	return nil
}

// free gives a section back to where it came from.
func (t *Tensor) free(b Buffer) error {
	if !b.Valid() {
		return nil
	}
	if t.alloc == nil {
		return t.dev.free(b)
	}
	if sa, ok := t.alloc.(SideAllocator); ok && t.dev.side.on {
		pt, err := t.dev.pointLocked()
		if err != nil {
			return err
		}
		sa.FreeAfter(b.ptr, b.cat, pt)
		return nil
	}
	t.alloc.Free(b.ptr, b.cat)
	return nil
}

// HistogramBytes is the size of one histogram HistogramInto writes.
const HistogramBytes = 256 * 8

// HistogramInto queues the count of the exponents of the first n values of
// src into dst at byte offset off: 256 little-endian uint64 counts
// (HistogramBytes), read back by the caller when it waits anyway.
func (d *Device) HistogramInto(dst Buffer, off int, src Buffer, n int) error {
	if err := checkDense("histogram source", src, n); err != nil {
		return err
	}
	if !dst.Valid() || off < 0 || off%8 != 0 || off+HistogramBytes > dst.size {
		return fmt.Errorf("gpu: histogram at %d into a %d-byte buffer", off, dst.size)
	}
	return d.do(func() error {
		p := dst.ptr + Ptr(off)
		if err := d.drv.memset32(p, 0, HistogramBytes/4); err != nil {
			return err
		}
		grid := min(max((n/8+threads-1)/threads, 1), 4*d.info.SMs)
		return d.launch(kHist, grid, threads, 8*256*4, ptrArg(src), uint64(n), uint64(p))
	})
}

// SyncDecodeStatus waits for the device and reads every tensor's status, as
// SyncStatus does, but reports only decode errors: a spill that did not fit
// is left for the caller, who finds it with Overflowed and encodes again
// into a larger overflow buffer.
func (d *Device) SyncDecodeStatus() error {
	return d.do(func() error {
		err := d.syncStatus()
		if err == nil {
			return nil
		}
		joined, ok := err.(interface{ Unwrap() []error })
		if !ok {
			return err
		}
		var keep []error
		for _, e := range joined.Unwrap() {
			var oe *OverflowError
			if !errors.As(e, &oe) {
				keep = append(keep, e)
			}
		}
		return errors.Join(keep...)
	})
}

// TrimOverflow gives back the overflow room past bytes where t's allocator
// can take it back in place (a ShrinkAllocator), and reports whether it
// did. bytes must hold the last encode's spill (OverflowLen, as of the last
// status read): the room past it is what no decode reads. The next encode
// grows the room again as it needs.
func (t *Tensor) TrimOverflow(bytes int) (bool, error) {
	trimmed := false
	err := t.dev.do(func() error {
		if bytes < 0 || uint64(bytes) < t.ovLen {
			return fmt.Errorf("gpu: %s: trimming the overflow room to %d bytes, the spill took %d", t.label(), bytes, t.ovLen)
		}
		s, ok := t.alloc.(ShrinkAllocator)
		size := max(bytes, 1)
		if !ok || bytes >= t.ovCap || size >= t.overflow.size || !s.Shrink(t.overflow.ptr, size, OverflowPool) {
			return nil
		}
		t.overflow.size, t.ovCap, trimmed = size, bytes, true
		return t.writeDesc()
	})
	return trimmed, err
}

// Overflowed reports whether the last encode's spill did not fit the
// overflow buffer, as of the last status read: the tensor is incomplete
// until it is encoded again with OverflowLen bytes of room.
func (t *Tensor) Overflowed() bool { return t.ovLen > uint64(t.ovCap) }

// Stats are the figures of the last encode into t (as of the last status
// read) given h, the histogram of the values it encoded: it reads the
// encoder's per-block counts (waiting for the device) and turns them into
// codec.Stats with codec's own formulas.
func (t *Tensor) Stats(h codec.Histogram) (codec.Stats, error) {
	var st codec.Stats
	if t.Overflowed() {
		return st, &OverflowError{Tensor: t.label(), Needed: int(t.ovLen), Holds: t.ovCap}
	}
	nb := t.blocks()
	b := make([]byte, 16*nb)
	if err := t.dev.do(func() error { return t.dev.dtoh(b, t.bstats, 0) }); err != nil {
		return st, err
	}
	var codeBits uint64
	for i := range nb {
		s := b[16*i:]
		codeBits += uint64(le32(s[4:]))
		st.Spilled += int(le32(s[8:]))
		st.SpillingStreams += int(le32(s[12:]))
	}
	st.Histogram = h
	// Finish reads the shape, the codebook and the overflow length.
	ct := t.hostShape()
	ct.Overflow = make([]byte, t.ovLen)
	st.Finish(ct, codeBits)
	return st, nil
}

// FusedFits reports whether a fused step from in to out runs as one fused
// kernel, its shared memory within the device's; otherwise SGDStepLCT and
// AdamWStepLCT decode, update and encode through scratch buffers of the
// Device's own, which a caller accounting its memory elsewhere avoids.
func (d *Device) FusedFits(in, out []*Tensor) bool {
	return !d.forceUnfused && fusedSmem(in, out) <= d.info.MaxSmemPerBlock
}
