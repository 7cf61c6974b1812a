package gpu

import (
	"fmt"
	"slices"
	"unsafe"

	"lcttop/codec"
)

// Codec runs the LCT codec on the GPU for host tensors; it implements
// lctfile.Backend and writes the same bytes as package codec. It keeps its
// device buffers between calls, growing them as tensors grow. A Codec must
// not be used by two goroutines at once.
type Codec struct {
	dev    *Device
	own    bool
	t      *Tensor
	vals   Buffer
	bstats []byte
	host   codec.Decoder // tensors of versions the kernels do not code (Decode)
	v3     codec3        // format version 3's buffers
	// kernelTimer, when set, times the version 3 kernels into kernelMs
	// (TimeKernels).
	kernelTimer *Timer
	kernelMs    KernelTimes
}

// NewCodec opens the first GPU (Open) for a Codec of its own.
func NewCodec() (*Codec, error) {
	d, err := Open()
	if err != nil {
		return nil, err
	}
	return &Codec{dev: d, own: true}, nil
}

// NewCodecOn makes a Codec that uses d (and leaves it open on Close).
func NewCodecOn(d *Device) *Codec { return &Codec{dev: d} }

// Close releases the Codec's buffers, and its device if it opened it.
func (c *Codec) Close() error {
	var first error
	if c.t != nil {
		first = c.t.Free()
		c.t = nil
	}
	if err := c.dev.Free(c.vals); err != nil && first == nil {
		first = err
	}
	c.vals = Buffer{}
	if err := c.v3.free(c.dev); err != nil && first == nil {
		first = err
	}
	if err := c.TimeKernels(false); err != nil && first == nil {
		first = err
	}
	if c.own {
		if err := c.dev.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// prepare shapes the scratch tensor and value buffer for n elements.
func (c *Codec) prepare(n int, l codec.Layout, caps []uint16, cb codec.Codebook) error {
	d := c.dev
	if c.t == nil {
		c.t = &Tensor{Name: "codec scratch", dev: d, cat: CodecScratch}
	}
	if err := c.t.reshape(n, l, caps, c.t.ovCap); err != nil {
		return err
	}
	if err := c.t.setCodebook(cb); err != nil {
		return err
	}
	return d.grow(&c.vals, 2*n, CodecScratch)
}

// Encode encodes src with codebook cb and layout l into dst, reusing dst's
// slices, and fills dst.Stats, exactly as codec.Encoder.Encode does (a
// layout with capacities per block gets codec.BlockCapacities, chosen here
// on the host).
//
// The kernels code format versions 2 and 3 (version 1 is refused).
func (c *Codec) Encode(dst *codec.Tensor, src []uint16, cb codec.Codebook, l codec.Layout) error {
	if l.FormatVersion() == codec.FormatVersion3 {
		return c.encode3(dst, src, cb, l)
	}
	if len(src) > codec.MaxElements {
		return fmt.Errorf("gpu: encode: %d elements, at most %d allowed", len(src), codec.MaxElements)
	}
	if err := cb.Validate(); err != nil {
		return fmt.Errorf("gpu: encode: %w", err)
	}
	var caps []uint16
	if l.PerBlock {
		caps = codec.BlockCapacities(&cb, l, src)
		if len(caps) > 0 {
			l.StreamBytes = int(slices.Max(caps))
		}
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("gpu: encode: %w", err)
	}
	return c.encodeBlocks(dst, src, cb, l, caps)
}

// encodeBlocks is Encode with the blocks' capacities given (as
// codec.Encoder.EncodeBlocks takes them).
func (c *Codec) encodeBlocks(dst *codec.Tensor, src []uint16, cb codec.Codebook, l codec.Layout, caps []uint16) error {
	n := len(src)
	d := c.dev
	return d.do(func() error {
		if err := c.prepare(n, l, caps, cb); err != nil {
			return err
		}
		t := c.t
		if err := d.htod(c.vals, 0, Bytes(src)); err != nil {
			return err
		}
		if err := d.encode(t, c.vals); err != nil {
			return err
		}
		// A spill the overflow buffer does not hold: grow it to the length
		// the encode reported and encode again (the buffer is kept for the
		// next tensors).
		if err := t.readStatus(); err != nil {
			return err
		}
		if t.ovLen > uint64(t.ovCap) {
			if err := t.growOverflow(int(t.ovLen)); err != nil {
				return err
			}
			if err := d.encode(t, c.vals); err != nil {
				return err
			}
		}
		if err := d.fullHistogram(c.vals, n); err != nil {
			return err
		}
		if err := t.download(dst); err != nil {
			return err
		}
		var hist codec.Histogram
		if err := d.readHistogram(&hist); err != nil {
			return err
		}
		nb := l.Blocks(n)
		c.bstats = resize(c.bstats, 16*nb)
		if err := d.dtoh(c.bstats, t.bstats, 0); err != nil {
			return err
		}
		var codeBits uint64
		var spilled, spilling int
		for b := range nb {
			s := c.bstats[16*b:]
			codeBits += uint64(le32(s[4:]))
			spilled += int(le32(s[8:]))
			spilling += int(le32(s[12:]))
		}
		// The device counts; codec's formulas turn the counts into the very
		// figures its own encoder reports.
		st := codec.Stats{Histogram: hist, Spilled: spilled, SpillingStreams: spilling}
		st.Finish(dst, codeBits)
		dst.Stats = st
		return nil
	})
}

// Decode decodes t into dst (len(dst) must be t.N), checking t's structure
// first and its streams on the device, as codec.Decoder.Decode does. The
// kernels decode format versions 2 and 3; a tensor of version 1 is decoded
// by the CPU reference decoder.
func (c *Codec) Decode(t *codec.Tensor, dst []uint16) error {
	if err := t.CheckStructure(); err != nil {
		return fmt.Errorf("gpu: decode: %w", err)
	}
	if len(dst) != t.N {
		return fmt.Errorf("gpu: decode: destination holds %d values, tensor has %d", len(dst), t.N)
	}
	if t.N == 0 {
		return nil
	}
	if t.Layout.FormatVersion() == codec.FormatVersion3 {
		return c.decode3(t, dst)
	}
	if v := t.Layout.FormatVersion(); v != codec.FormatVersion2 {
		if err := c.host.Decode(t, dst); err != nil {
			return fmt.Errorf("gpu: decode (version %d, on the host): %w", v, err)
		}
		return nil
	}
	d := c.dev
	return d.do(func() error {
		if err := c.prepare(t.N, t.Layout, t.BlockBytes, t.Codebook); err != nil {
			return err
		}
		if err := c.t.upload(t); err != nil {
			return err
		}
		if err := d.decode(c.vals, c.t); err != nil {
			return err
		}
		if err := d.dtoh(Bytes(dst), c.vals, 0); err != nil {
			return err
		}
		if err := c.t.readStatus(); err != nil {
			return err
		}
		return decodeError("tensor", c.t.decodeErr)
	})
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func u64Bytes(v []uint64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))
}
