package bench

import (
	"fmt"

	"lcttop/codec"
	"lcttop/gpu"
)

// batchGroup is a group of tensors encoded and decoded together, shaped
// like what the trainer writes at once.
type batchGroup struct {
	name   string
	shapes [][2]int
	scale  float32
}

// batchGroups are one gpt162m layer's parameters (dim 1024: attention
// qkv and projection, MLP in and out) and one layer's saved activations at
// batch 8x1024.
var batchGroups = []batchGroup{
	{"layer params", [][2]int{{1024, 3072}, {1024, 1024}, {4096, 1024}, {1024, 4096}}, 0.02},
	{"layer acts", [][2]int{{8192, 1024}, {8192, 1024}, {8192, 1024}, {8192, 1024}, {8192, 3072}, {8192, 4096}, {8192, 4096}}, 1},
}

// batches measures each batchGroup encoded (with and without the exponent
// histograms the trainer reads) and decoded one launch per tensor and in
// one batched launch, and checks that both give the same bytes, histograms
// and values.
func (b *bencher) batches() error {
	for _, bb := range batchGroups {
		if err := b.batch(bb); err != nil {
			return fmt.Errorf("bench: %s: %w", bb.name, err)
		}
	}
	return nil
}

func (b *bencher) batch(bb batchGroup) error {
	d := b.d
	var bufs []gpu.Buffer
	var ts []*gpu.Tensor
	defer func() {
		for _, t := range ts {
			t.Free()
		}
		for _, x := range bufs {
			d.Free(x)
		}
	}()
	alloc := func(bytes int, cat gpu.Category) (gpu.Buffer, error) {
		x, err := d.Alloc(bytes, cat)
		if err == nil {
			bufs = append(bufs, x)
		}
		return x, err
	}
	var srcs, dsts []gpu.Buffer
	total, stored, headers := 0, int64(0), int64(0)
	for _, s := range bb.shapes {
		n := s[0] * s[1]
		if d.Emulated() {
			n = (n >> 8) + 4321 // a block or so each: the emulation is slow
		}
		src, err := alloc(2*n, gpu.Activations)
		if err != nil {
			return err
		}
		if err := b.fill(src, n, bb.scale, false); err != nil {
			return err
		}
		t, err := b.newTensor(src, n, codec.Clean, codec.Gaussian, gpu.Weights)
		if err != nil {
			return err
		}
		ts = append(ts, t)
		dst, err := alloc(2*n, gpu.Activations)
		if err != nil {
			return err
		}
		srcs, dsts = append(srcs, src), append(dsts, dst)
		total += n
		stored += t.DeviceBytes()
		headers += int64(t.HeaderBytes())
	}
	hist, err := alloc(2*len(ts)*gpu.HistogramBytes, gpu.CodecScratch)
	if err != nil {
		return err
	}
	offs := make([]int, len(ts))
	for i := range offs {
		offs[i] = i * gpu.HistogramBytes
	}
	perTensorHist := func(base int) error {
		for i, t := range ts {
			if err := d.Encode(t, srcs[i]); err != nil {
				return err
			}
			if err := d.HistogramInto(hist, base+offs[i], srcs[i], t.N()); err != nil {
				return err
			}
		}
		return nil
	}
	half := len(ts) * gpu.HistogramBytes
	cases := []struct {
		op string
		f  func() error
	}{
		{"encode", func() error {
			for i, t := range ts {
				if err := d.Encode(t, srcs[i]); err != nil {
					return err
				}
			}
			return nil
		}},
		{"encode-batch", func() error { return d.EncodeBatch(ts, srcs, gpu.Buffer{}, nil) }},
		{"encode+hist", func() error { return perTensorHist(half) }},
		{"encode-batch+hist", func() error { return d.EncodeBatch(ts, srcs, hist, offs) }},
		{"decode", func() error {
			for i, t := range ts {
				if err := d.Decode(dsts[i], t); err != nil {
					return err
				}
			}
			return nil
		}},
		{"decode-batch", func() error { return d.DecodeBatch(dsts, ts) }},
	}
	data := fmt.Sprintf("%s (%d)", bb.name, len(ts))
	for _, c := range cases {
		med, lo, hi, err := b.time(c.f)
		if err != nil {
			return err
		}
		if err := d.SyncStatus(); err != nil {
			return err
		}
		b.add(Result{Op: c.op, Data: data, Preset: codec.Clean.String(), Dist: codec.Gaussian.String(), Elements: total,
			Ms: med, MinMs: lo, MaxMs: hi, Bytes: int64(2*total) + stored, Ratio: float64(2*total) / float64(stored+headers)})
	}
	if b.opt.Profile {
		return nil
	}
	// The last runs: batched histograms in the first half, per-tensor in the
	// second (the encode+hist case ran before); decoded values in dsts.
	hb := make([]byte, 2*half)
	if err := d.Download(hb, hist); err != nil {
		return err
	}
	if string(hb[:half]) != string(hb[half:]) {
		return fmt.Errorf("batched histograms differ from HistogramInto's")
	}
	for i := range ts {
		if err := b.sameValues(srcs[i], dsts[i], ts[i].N(), fmt.Sprintf("batched decode of %s tensor %d", bb.name, i)); err != nil {
			return err
		}
	}
	return nil
}
