package bench

import (
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/internal/testgpu"
	"lcttop/internal/testtensors"
)

// TestBatch: the batch rows of the bench on two small tensors: every
// operation reported once over all the elements, the batched histograms
// equal to HistogramInto's and the batched decode equal to the sources
// (batch checks them itself and fails otherwise).
func TestBatch(t *testing.T) {
	d := testgpu.Shared(t)
	timer, err := d.NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Close()
	b := &bencher{d: d, opt: Options{Reps: 1}, rep: &Report{CopyGBps: 1}, timer: timer}
	bb := batchGroup{"small", [][2]int{{256, 300}, {100, 7}}, 0.5}
	if err := b.batch(bb); err != nil {
		t.Fatal(err)
	}
	n := 256*300 + 100*7
	if d.Emulated() { // the bench shrinks its shapes for the emulation only
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

// The bench's row with a capacity per block encodes and decodes a real
// tensor exactly (measure checks the round trip), beside the row with one
// capacity for the tensor.
func TestCapacityPerBlock(t *testing.T) {
	d := testgpu.Shared(t)
	timer, err := d.NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Close()
	b := &bencher{d: d, timer: timer, opt: Options{Reps: 1}, rep: &Report{CopyGBps: 1}}
	var vals []uint16 // the first file's largest tensor
	for _, nt := range testtensors.LoadBF16(t, testtensors.Files(t)[0]) {
		if len(nt.Values) > len(vals) {
			vals = nt.Values
		}
	}
	n := min(len(vals), 1<<20)
	vals = vals[:n]
	src, err := d.Alloc(2*n, gpu.Activations)
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

// The bench's version 3 rows time the kernels of a real tensor coded as
// pack codes it by default: an encode and a decode row, the decode exact
// (version3 checks it), the ratio that of the CPU codec's tensor.
func TestVersion3Rows(t *testing.T) {
	d := testgpu.Shared(t)
	b := &bencher{d: d, opt: Options{Reps: 1}, rep: &Report{CopyGBps: 1}}
	var vals []uint16 // the first file's largest tensor
	for _, nt := range testtensors.LoadBF16(t, testtensors.Files(t)[0]) {
		if len(nt.Values) > len(vals) {
			vals = nt.Values
		}
	}
	vals = vals[:min(len(vals), 1<<20)]
	if err := b.version3(vals, "real"); err != nil {
		t.Fatal(err)
	}
	cpu, err := codec.Encode(vals, codec.Options{Preset: codec.Auto, Dist: codec.Empirical, Version: codec.FormatVersion3})
	if err != nil {
		t.Fatal(err)
	}
	want := float64(2*len(vals)) / float64(cpu.StoredBytes())
	r := b.rep.Results
	if len(r) != 2 || r[0].Op != "encode v3" || r[1].Op != "decode v3" {
		t.Fatalf("rows %+v", r)
	}
	for _, x := range r {
		if x.Ratio != want || x.Ms <= 0 || x.Elements != len(vals) {
			t.Errorf("%s: ratio %.6f (CPU codec %.6f), %.4f ms, %d elements", x.Op, x.Ratio, want, x.Ms, x.Elements)
		}
	}
}
