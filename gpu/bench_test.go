//go:build cuda || kernelemu

package gpu

import (
	"testing"

	"lcttop/codec"
)

// benchTensor makes n gaussian values on the device and their LCT tensor.
func benchTensor(b *testing.B, n int) (*Device, Buffer, *Tensor) {
	d := device(b)
	src, err := d.Alloc(2*n, Activations)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Free(src) })
	if err := d.FillGaussian(src, n, 1, 0.02); err != nil {
		b.Fatal(err)
	}
	h, err := d.SampleHistogram(src, n)
	if err != nil {
		b.Fatal(err)
	}
	cb := codec.FitCodebook(codec.Gaussian, &h)
	t, err := d.NewTensor(n, codec.ChooseLayout(codec.Clean, &cb, &h), cb, n/16+4096, Weights)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { t.Free() })
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
