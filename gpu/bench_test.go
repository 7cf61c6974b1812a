package gpu

import (
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testtensors"
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

// TestBenchBatch: the batch rows of the bench on two small tensors: every
// operation reported once over all the elements, the batched histograms
// equal to HistogramInto's and the batched decode equal to the sources
// (batch checks them itself and fails otherwise).
func TestBenchBatch(t *testing.T) {
	d := device(t)
	timer, err := d.NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Close()
	b := &bencher{d: d, opt: BenchOptions{Reps: 1}, rep: &BenchReport{CopyGBps: 1}, timer: timer}
	bb := benchBatch{"small", [][2]int{{256, 300}, {100, 7}}, 0.5}
	if err := b.batch(bb); err != nil {
		t.Fatal(err)
	}
	n := 256*300 + 100*7
	if d.info.Emulated { // the bench shrinks its shapes for the emulation only
		n = 256*300>>8 + 4321 + 100*7>>8 + 4321
	}
	var ops []string
	for _, r := range b.rep.Results {
		ops = append(ops, r.Op)
		if r.Elements != n || r.Data != "small (2)" || r.Bytes <= int64(2*n) {
			t.Errorf("%s: %d elements of %q, %d bytes; want %d elements of \"small (2)\", more than %d bytes", r.Op, r.Elements, r.Data, r.Bytes, n, 2*n)
		}
	}
	if want := "encode encode-batch encode+hist encode-batch+hist decode decode-batch"; strings.Join(ops, " ") != want {
		t.Fatalf("ops %q, want %q", strings.Join(ops, " "), want)
	}
}

// layerBatch makes one gpt162m layer's parameters (benchBatches[0]; the
// emulation: a block or so each) as sources and encoded tensors.
func layerBatch(b *testing.B) (d *Device, srcs []Buffer, ts []*Tensor, total int) {
	d = device(b)
	for i, s := range benchBatches[0].shapes {
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

// The bench's row with a capacity per block encodes and decodes a real
// tensor exactly (measure checks the round trip), beside the row with one
// capacity for the tensor.
func TestBenchCapacityPerBlock(t *testing.T) {
	d := device(t)
	timer, err := d.NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Close()
	b := &bencher{d: d, timer: timer, opt: BenchOptions{Reps: 1}, rep: &BenchReport{CopyGBps: 1}}
	var vals []uint16 // the first file's largest tensor
	for _, nt := range testtensors.LoadBF16(t, testtensors.Files(t)[0]) {
		if len(nt.Values) > len(vals) {
			vals = nt.Values
		}
	}
	n := min(len(vals), 1<<20)
	vals = vals[:n]
	src, err := d.Alloc(2*n, Activations)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(src)
	if err := d.UploadBF16(src, vals); err != nil {
		t.Fatal(err)
	}
	if err := b.codec(src, n, "one", codec.Auto, codec.Empirical); err != nil {
		t.Fatal(err)
	}
	if err := b.codecPerBlock(src, vals, "per block"); err != nil {
		t.Fatal(err)
	}
	r := b.rep.Results
	if len(r) != 4 || r[2].Data != "per block" || r[2].Op != "encode" || r[3].Op != "decode" {
		t.Fatalf("rows %+v", r)
	}
	if r[2].Ratio <= 1 || r[0].Ratio <= 1 {
		t.Errorf("ratio %.4f with a capacity per block, %.4f with one", r[2].Ratio, r[0].Ratio)
	}
	t.Logf("ratio %.4f with a capacity per block, %.4f with one", r[2].Ratio, r[0].Ratio)
}
