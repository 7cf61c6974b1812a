package gpu

import (
	"fmt"

	"lcttop/codec"
)

// Chunk sizes and table sizes of kernels/lct.cu, for shared memory sizing.
const (
	codecChunk = 32 // LCT_CH
	fusedChunk = 16 // LCT_CHF
	threads    = 256
)

// rowStride is the kernels' row_stride: words between two streams' rows in
// shared memory, as the readers keep them.
func rowStride(c int) int { return ((c + 3) / 4) | 1 }

// rowStrideOut is the kernels' row_stride_out: the writers' rows, each with
// a spare word past its end.
func rowStrideOut(c int) int { return ((c+3)/4 + 1) | 1 }

// encodeSmem is the shared memory of lct_encode: code and length tables,
// chunk, scratch words, rows.
func encodeSmem(c int) int { return 1024 + 256 + codecChunk*256 + 32*4 + 256*4*rowStrideOut(c) }

// decodeSmem is the shared memory of lct_decode: its two tables (512 and
// 256 bytes), chunk, scratch words, rows and the slack of 136 words past
// them (LCT_SLACK).
func decodeSmem(c int) int { return 768 + codecChunk*256 + 32*4 + 256*4*rowStride(c) + 136*4 }

// fusedSmem is the shared memory of the fused updates.
func fusedSmem(in, out []*Tensor) int {
	nt := len(in)
	s := nt*(1024+768) + 32*4 + nt*fusedChunk*256
	for i := range nt {
		s += 256*4*rowStride(in[i].layout.StreamBytes) + 256*4*rowStride(out[i].layout.StreamBytes)
	}
	return s
}

func (t *Tensor) blocks() int { return t.layout.Blocks(t.n) }

func (t *Tensor) check(d *Device) error {
	if t == nil || t.freed {
		return fmt.Errorf("gpu: tensor is nil or freed")
	}
	if t.dev != d {
		return fmt.Errorf("gpu: %s belongs to another device", t.label())
	}
	return nil
}

func checkDense(what string, b Buffer, n int) error {
	if !b.Valid() {
		return fmt.Errorf("gpu: %s: no buffer", what)
	}
	if b.size < 2*n {
		return fmt.Errorf("gpu: %s: %d-byte buffer holds fewer than %d BF16 values", what, b.size, n)
	}
	return nil
}

// Encode encodes n = dst.N() BF16 values from src into dst with dst's
// codebook and layout: sf bytes, streams, bitmaps, offsets and overflow, the
// same bytes codec.Encoder writes. It does not wait for the device; if the
// spill does not fit dst's overflow buffer, SyncStatus says so.
func (d *Device) Encode(dst *Tensor, src Buffer) error {
	if err := dst.check(d); err != nil {
		return err
	}
	if err := checkDense("encode source", src, dst.n); err != nil {
		return err
	}
	return d.do(func() error { return d.encode(dst, src) })
}

// encode launches the encoder: one CTA a block, each placing its block's
// overflow region by look-back and writing it where it fits.
func (d *Device) encode(t *Tensor, src Buffer) error {
	if t.blocks() == 0 {
		return t.setStatus(0)
	}
	return d.launch(kEncode, t.blocks(), threads, encodeSmem(t.layout.StreamBytes), ptrArg(t.desc), ptrArg(src))
}

// Decode decodes src into n = src.N() BF16 values of dst. It does not wait
// for the device; corrupt data is reported at SyncStatus.
func (d *Device) Decode(dst Buffer, src *Tensor) error {
	if err := src.check(d); err != nil {
		return err
	}
	if err := checkDense("decode destination", dst, src.n); err != nil {
		return err
	}
	return d.do(func() error { return d.decode(dst, src) })
}

func (d *Device) decode(dst Buffer, t *Tensor) error {
	k, _ := d.decoders(t.blocks())
	return d.decodeWith(k, dst, t)
}

// decodeWaveCTAs is how many decoding CTAs share a multiprocessor (the
// kernels' launch bounds, within the H200's shared memory).
const decodeWaveCTAs = 6

// decoders picks the decoder, single and batched, for a grid of blocks.
// While the grid fits one wave, each multiprocessor's few CTAs wait on
// their readers' chains of dependent loads, and the readers that load the
// next word ahead (lct_decode_pipe) finish sooner; past it, the plain
// readers' fewer shared-memory loads win. On the H200: 1 Mi elements
// 27.7 -> 25.2 us, 4 Mi 28.1 -> 25.5, 16 Mi 43.2 -> 42.1, one layer's
// parameters batched (192 blocks) 44.9 -> 43.9; but 256 Mi 319.5 -> 336.1
// us and a layer's activations batched (1920 blocks) 184.9 -> 190.7.
func (d *Device) decoders(blocks int) (single, batch kernel) {
	if blocks <= decodeWaveCTAs*d.info.SMs {
		return kDecodePipe, kDecodeBatchPipe
	}
	return kDecode, kDecodeBatch
}

// SampleHistogram counts the exponents of the deterministic sample of the
// first n values of src (format.md §2), the histogram codebooks are fitted
// to. It waits for the result.
func (d *Device) SampleHistogram(src Buffer, n int) (codec.Histogram, error) {
	var h codec.Histogram
	if err := checkDense("sample source", src, n); err != nil {
		return h, err
	}
	err := d.do(func() error {
		if err := d.grow(&d.hist, 256*8, CodecScratch); err != nil {
			return err
		}
		if err := d.launch(kSampleHist, 1, threads, 1024, ptrArg(src), uint64(n), ptrArg(d.hist)); err != nil {
			return err
		}
		var b [1024]byte
		if err := d.dtoh(b[:], d.hist, 0); err != nil {
			return err
		}
		for e := range h {
			h[e] = uint64(uint32(b[4*e]) | uint32(b[4*e+1])<<8 | uint32(b[4*e+2])<<16 | uint32(b[4*e+3])<<24)
		}
		return nil
	})
	return h, err
}

// FullHistogram counts the exponents of the first n values of src. It waits
// for the result.
func (d *Device) FullHistogram(src Buffer, n int) (codec.Histogram, error) {
	var h codec.Histogram
	if err := checkDense("histogram source", src, n); err != nil {
		return h, err
	}
	err := d.do(func() error {
		if err := d.fullHistogram(src, n); err != nil {
			return err
		}
		return d.readHistogram(&h)
	})
	return h, err
}

// fullHistogram launches the histogram of src into d.hist.
func (d *Device) fullHistogram(src Buffer, n int) error {
	if err := d.grow(&d.hist, 256*8, CodecScratch); err != nil {
		return err
	}
	if err := d.drv.memset32(Ptr(d.hist.ptr), 0, 512); err != nil {
		return err
	}
	grid := min(max((n/8+threads-1)/threads, 1), 4*d.info.SMs)
	return d.launch(kHist, grid, threads, 8*256*4, ptrArg(src), uint64(n), ptrArg(d.hist))
}

func (d *Device) readHistogram(h *codec.Histogram) error {
	return d.dtoh(u64Bytes(h[:]), d.hist, 0)
}

// plainGrid sizes the plain updates' grid-stride launches.
func (d *Device) plainGrid(n int) int {
	return min(max((n/8+threads-1)/threads, 1), 16*d.info.SMs)
}

// SGDStep applies one SGD step in place to n BF16 values: w and m updated
// from g (SGDStep gives the formula).
func (d *Device) SGDStep(w, m, g Buffer, n int, s SGDStep) error {
	for _, c := range []struct {
		what string
		b    Buffer
	}{{"sgd weights", w}, {"sgd momentum", m}, {"sgd gradient", g}} {
		if err := checkDense(c.what, c.b, n); err != nil {
			return err
		}
	}
	return d.do(func() error { return d.sgdPlain(w, m, g, n, s) })
}

func (d *Device) sgdPlain(w, m, g Buffer, n int, s SGDStep) error {
	if n == 0 {
		return nil
	}
	args := append([]uint64{ptrArg(w), ptrArg(m), ptrArg(g), uint64(n)}, s.args()...)
	return d.launch(kSGDBF16, d.plainGrid(n), threads, 0, args...)
}

// AdamWStep applies one AdamW step in place to n BF16 values: w, m and v
// updated from g (AdamWStep gives the formula).
func (d *Device) AdamWStep(w, m, v, g Buffer, n int, s AdamWStep) error {
	for _, c := range []struct {
		what string
		b    Buffer
	}{{"adamw weights", w}, {"adamw m", m}, {"adamw v", v}, {"adamw gradient", g}} {
		if err := checkDense(c.what, c.b, n); err != nil {
			return err
		}
	}
	return d.do(func() error { return d.adamwPlain(w, m, v, g, n, s) })
}

func (d *Device) adamwPlain(w, m, v, g Buffer, n int, s AdamWStep) error {
	if n == 0 {
		return nil
	}
	args := append([]uint64{ptrArg(w), ptrArg(m), ptrArg(v), ptrArg(g), uint64(n)}, s.args()...)
	return d.launch(kAdamWBF16, d.plainGrid(n), threads, 0, args...)
}

// SGDStepLCT applies one SGD step to compressed tensors: it reads wIn and
// mIn, updates them with g and writes the results, encoded with the output
// tensors' codebooks, into wOut and mOut, in one pass. Outputs must be other
// tensors than the inputs (a spilling block is computed again from the
// inputs to place its overflow); all four have the same N and block size.
// The result equals decoding the inputs, applying SGDStep to the values and
// encoding them. It does not wait for the device: SyncStatus reports a spill
// that did not fit an output's overflow buffer, or corrupt input.
func (d *Device) SGDStepLCT(wOut, mOut, wIn, mIn *Tensor, g Buffer, s SGDStep) error {
	in, out := []*Tensor{wIn, mIn}, []*Tensor{wOut, mOut}
	if err := d.checkFused("sgd", in, out, g); err != nil {
		return err
	}
	return d.do(func() error {
		return d.fusedStep(in, out, g, kSGDLCT, kSGDLCTOverflow, s.args(), func(v []Buffer) error {
			return d.sgdPlain(v[0], v[1], g, wIn.n, s)
		})
	})
}

// AdamWStepLCT applies one AdamW step to compressed tensors, as SGDStepLCT
// does for SGD.
func (d *Device) AdamWStepLCT(wOut, mOut, vOut, wIn, mIn, vIn *Tensor, g Buffer, s AdamWStep) error {
	in, out := []*Tensor{wIn, mIn, vIn}, []*Tensor{wOut, mOut, vOut}
	if err := d.checkFused("adamw", in, out, g); err != nil {
		return err
	}
	return d.do(func() error {
		return d.fusedStep(in, out, g, kAdamWLCT, kAdamWLCTOverflow, s.args(), func(v []Buffer) error {
			return d.adamwPlain(v[0], v[1], v[2], g, wIn.n, s)
		})
	})
}

func (d *Device) checkFused(op string, in, out []*Tensor, g Buffer) error {
	for _, t := range append(append([]*Tensor{}, in...), out...) {
		if err := t.check(d); err != nil {
			return fmt.Errorf("gpu: %s step: %w", op, err)
		}
	}
	n, bs := in[0].n, in[0].layout.BlockSize
	for _, t := range append(append([]*Tensor{}, in...), out...) {
		if t.n != n || t.layout.BlockSize != bs {
			return fmt.Errorf("gpu: %s step: %s has %d elements in blocks of %d, %s %d in blocks of %d",
				op, t.label(), t.n, t.layout.BlockSize, in[0].label(), n, bs)
		}
	}
	for i, a := range out {
		for _, b := range in {
			if a == b {
				return fmt.Errorf("gpu: %s step: %s is both input and output; outputs must be other tensors", op, a.label())
			}
		}
		for _, b := range out[:i] {
			if a == b {
				return fmt.Errorf("gpu: %s step: %s appears twice among the outputs", op, a.label())
			}
		}
	}
	return checkDense(op+" gradient", g, n)
}

// fusedStep launches a fused update, or where its shared memory exceeds the
// device's, the same update unfused: decode into scratch, plain update,
// encode.
func (d *Device) fusedStep(in, out []*Tensor, g Buffer, main, ovf kernel, scalars []uint64, plain func([]Buffer) error) error {
	n, nb := in[0].n, in[0].blocks()
	for _, t := range in {
		if err := t.clearError(); err != nil {
			return err
		}
	}
	if nb == 0 {
		for _, t := range out {
			if err := t.setStatus(0); err != nil {
				return err
			}
		}
		return nil
	}
	smem := fusedSmem(in, out)
	if d.forceUnfused || smem > d.info.MaxSmemPerBlock {
		vals := d.scratch[:len(in)]
		for i, t := range in {
			if err := d.grow(&vals[i], 2*n, CodecScratch); err != nil {
				return err
			}
			if err := d.decode(vals[i], t); err != nil {
				return err
			}
		}
		if err := plain(vals); err != nil {
			return err
		}
		for i, t := range out {
			if err := d.encode(t, vals[i]); err != nil {
				return err
			}
		}
		return nil
	}
	args := make([]uint64, 0, 2*len(in)+1+len(scalars))
	for _, t := range in {
		args = append(args, ptrArg(t.desc))
	}
	for _, t := range out {
		args = append(args, ptrArg(t.desc))
	}
	args = append(args, ptrArg(g))
	args = append(args, scalars...)
	if err := d.launch(main, nb, threads, smem, args...); err != nil {
		return err
	}
	return d.launch(ovf, nb, threads, smem, args...)
}

// FillGaussian writes n BF16 values drawn from N(0, scale²) into dst, the
// same values for the same seed (benchmark data).
func (d *Device) FillGaussian(dst Buffer, n int, seed uint64, scale float32) error {
	return d.fillGaussian(dst, n, seed, scale, false)
}

// CopyBuffer copies bytes from src to dst on the device.
func (d *Device) CopyBuffer(dst, src Buffer, bytes int) error {
	if bytes > dst.size || bytes > src.size {
		return fmt.Errorf("gpu: copy of %d bytes between buffers of %d and %d", bytes, src.size, dst.size)
	}
	return d.do(func() error { return d.drv.dtod(Ptr(dst.ptr), Ptr(src.ptr), bytes) })
}

// FillAbsGaussian is FillGaussian with the values' magnitudes (|x|): data
// shaped like Adam's second moment.
func (d *Device) FillAbsGaussian(dst Buffer, n int, seed uint64, scale float32) error {
	return d.fillGaussian(dst, n, seed, scale, true)
}

// fillGaussian is FillGaussian with absolute values on demand.
func (d *Device) fillGaussian(dst Buffer, n int, seed uint64, scale float32, absolute bool) error {
	if err := checkDense("gaussian fill", dst, n); err != nil {
		return err
	}
	abs := uint64(0)
	if absolute {
		abs = 1
	}
	return d.do(func() error {
		return d.launch(kFillGaussian, min(max((n+threads-1)/threads, 1), 8*d.info.SMs), threads, 0,
			ptrArg(dst), uint64(n), seed, f32arg(scale), abs)
	})
}

// SpilledValues reads how many exponents t's last encode spilled.
func (t *Tensor) SpilledValues() (int, error) {
	nb := t.blocks()
	buf := make([]byte, 16*nb)
	err := t.dev.do(func() error { return t.dev.dtoh(buf, t.bstats, 0) })
	spilled := 0
	for blk := range nb {
		spilled += int(le32(buf[16*blk+8:]))
	}
	return spilled, err
}
