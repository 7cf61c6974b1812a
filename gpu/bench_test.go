package gpu

import (
	"testing"

	"lcttop/codec"
)

// gaussianTensor makes n gaussian values (seed) on d and an empty CLEAN
// tensor fitted to them, both freed when the benchmark ends.
func gaussianTensor(b *testing.B, d *Device, n int, seed uint64) (Buffer, *Tensor) {
	src, err := d.Alloc(2*n, Activations)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Free(src) })
	if err := d.FillGaussian(src, n, seed, 0.02); err != nil {
		b.Fatal(err)
	}
	h, err := d.SampleHistogram(src, n)
	if err != nil {
		b.Fatal(err)
	}
	cb := codec.FitCodebook(codec.Gaussian, &h)
	t, err := d.NewTensor(n, codec.ChooseLayout(codec.Clean, &cb, &h).WithVersion(codec.FormatVersion2), cb, n/16+4096, Weights)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { t.Free() })
	return src, t
}

// benchTensor makes n gaussian values on the device and their LCT tensor.
func benchTensor(b *testing.B, n int) (*Device, Buffer, *Tensor) {
	d := device(b)
	src, t := gaussianTensor(b, d, n, 1)
	if err := d.Encode(t, src); err != nil {
		b.Fatal(err)
	}
	if err := d.SyncStatus(); err != nil {
		b.Fatal(err)
	}
	return d, src, t
}

func benchSize(b *testing.B) int {
	if emulated(b) {
		return 1 << 17
	}
	return 64 << 20
}

// BenchmarkDeviceEncode: bytes are the BF16 input's.
func BenchmarkDeviceEncode(b *testing.B) {
	n := benchSize(b)
	d, src, t := benchTensor(b, n)
	b.SetBytes(int64(2 * n))
	b.ResetTimer()
	for range b.N {
		if err := d.Encode(t, src); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.SyncStatus(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDeviceDecode: bytes are the BF16 output's.
func BenchmarkDeviceDecode(b *testing.B) {
	n := benchSize(b)
	d, _, t := benchTensor(b, n)
	dst, err := d.Alloc(2*n, Activations)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Free(dst)
	b.SetBytes(int64(2 * n))
	b.ResetTimer()
	for range b.N {
		if err := d.Decode(dst, t); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.SyncStatus(); err != nil {
		b.Fatal(err)
	}
}

// layerShapes are one gpt162m layer's parameters (dim 1024: attention qkv
// and projection, MLP in and out), as lcttop bench batches them.
var layerShapes = [][2]int{{1024, 3072}, {1024, 1024}, {4096, 1024}, {1024, 4096}}

// layerBatch makes layerShapes (the emulation: a block or so each) as
// sources and encoded tensors.
func layerBatch(b *testing.B) (d *Device, srcs []Buffer, ts []*Tensor, total int) {
	d = device(b)
	for i, s := range layerShapes {
		n := s[0] * s[1]
		if emulated(b) {
			n = n>>8 + 4321
		}
		src, t := gaussianTensor(b, d, n, uint64(i+1))
		srcs, ts, total = append(srcs, src), append(ts, t), total+n
	}
	if err := d.EncodeBatch(ts, srcs, Buffer{}, nil); err != nil {
		b.Fatal(err)
	}
	if err := d.SyncStatus(); err != nil {
		b.Fatal(err)
	}
	return d, srcs, ts, total
}

// BenchmarkDeviceEncodeBatch: one layer's parameters in one launch, with
// their histograms; bytes are the BF16 inputs'.
func BenchmarkDeviceEncodeBatch(b *testing.B) {
	d, srcs, ts, total := layerBatch(b)
	hist, err := d.Alloc(len(ts)*HistogramBytes, CodecScratch)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Free(hist)
	offs := make([]int, len(ts))
	for i := range offs {
		offs[i] = i * HistogramBytes
	}
	b.SetBytes(int64(2 * total))
	b.ResetTimer()
	for range b.N {
		if err := d.EncodeBatch(ts, srcs, hist, offs); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.SyncStatus(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDeviceDecodeBatch: one layer's parameters decoded in one launch;
// bytes are the BF16 outputs'.
func BenchmarkDeviceDecodeBatch(b *testing.B) {
	d, srcs, ts, total := layerBatch(b)
	b.SetBytes(int64(2 * total))
	b.ResetTimer()
	for range b.N {
		if err := d.DecodeBatch(srcs, ts); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.SyncStatus(); err != nil {
		b.Fatal(err)
	}
}
