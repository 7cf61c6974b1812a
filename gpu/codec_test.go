package gpu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testbf16"
)

// allPatterns is every BF16 bit pattern once, shuffled deterministically.
func allPatterns(seed uint64) []uint16 {
	return testbf16.AllPatterns(rand.New(rand.NewPCG(seed, 7)))
}

// TestEncodeAllPatterns: every preset and distribution on all 65,536
// patterns (shuffled, and in order): GPU bytes and Stats equal codec's, GPU
// decode restores every pattern. The emulation runs every preset with
// gaussian and every distribution with CLEAN.
func TestEncodeAllPatterns(t *testing.T) {
	c := testCodec(t)
	shuffled := allPatterns(1)
	ordered := testbf16.AllPatterns(nil)
	for _, p := range codec.Presets {
		for _, d := range codec.Distributions {
			if emulated(t) && p != codec.Clean && d != codec.Gaussian {
				continue
			}
			cb, l := fitBlocks(shuffled, p, d)
			checkEncode(t, c, fmt.Sprintf("all patterns shuffled %s/%s", p, d), shuffled, cb, l)
		}
	}
	cb, l := fit(ordered, codec.Clean, codec.Empirical)
	checkEncode(t, c, "all patterns in order", ordered, cb, l)
}

// TestEncodeSizes: partial last blocks and sizes that are multiples of
// nothing, including sizes below one stream row and below the sample.
func TestEncodeSizes(t *testing.T) {
	c := testCodec(t)
	r := rand.New(rand.NewPCG(3, 4))
	sizes := []int{0, 1, 2, 7, 8, 9, 255, 256, 257, 1000, 4095, 4096, 4097, 32767, 32768, 32769, 65535, 65536, 65537, 131072 + 12345, 300007}
	if emulated(t) {
		sizes = []int{0, 1, 9, 257, 4097, 32769, 65537}
	}
	for _, n := range sizes {
		src := testbf16.Gaussian(r, n, 0.05)
		for _, p := range []codec.Preset{codec.Clean, codec.High, codec.Auto} {
			cb, l := fitBlocks(src, p, codec.Laplace)
			checkEncode(t, c, fmt.Sprintf("gaussian n=%d %s", n, p), src, cb, l)
		}
	}
}

// TestEncodeAdversarial: tensors whose every stream spills, and mixes of
// spilling and fitting streams.
func TestEncodeAdversarial(t *testing.T) {
	c := testCodec(t)
	r := rand.New(rand.NewPCG(5, 6))
	n := 3*65536 + 777
	if emulated(t) {
		n = 65536 + 777
	}
	normal := testbf16.Gaussian(r, n, 0.01)
	cbNormal, clean := fit(normal, codec.Clean, codec.Gaussian)

	// Exponents drawn uniformly: nearly all escaped, 9+ bits each.
	uniform := make([]uint16, n)
	for i := range uniform {
		uniform[i] = uint16(r.Uint32())
	}
	want := checkEncode(t, c, "uniform exponents, normal codebook", uniform, cbNormal, clean)
	if want.Stats.SpillingStreams != want.Stats.TotalStreams {
		t.Fatalf("uniform exponents: %d of %d streams spill; the test wants every stream to", want.Stats.SpillingStreams, want.Stats.TotalStreams)
	}

	// Two bytes per stream: everything past the first codes spills.
	tiny := codec.Layout{Preset: codec.Auto, BlockSize: 65536, StreamBytes: 2, Version: codec.FormatVersion2}
	want = checkEncode(t, c, "AUTO with C=2", normal, cbNormal, tiny)
	if full := 256 * (n / 65536); want.Stats.SpillingStreams < full {
		// (the partial last block's streams are short enough to fit at times)
		t.Fatalf("C=2: %d of %d streams spill, want at least the %d of the full blocks", want.Stats.SpillingStreams, want.Stats.TotalStreams, full)
	}

	// Even streams escape-heavy, odd ones normal; and every other block.
	mixed := append([]uint16(nil), normal...)
	for i := range mixed {
		if clean.Stream(i%65536)%2 == 0 || (i/65536)%2 == 1 {
			mixed[i] = uniform[i]
		}
	}
	checkEncode(t, c, "mixed streams", mixed, cbNormal, clean)

	// Zeros, subnormals, infinities and NaNs: exponents 0 and 255 only.
	edge := make([]uint16, n)
	for i := range edge {
		e := uint16(0)
		if r.IntN(2) == 1 {
			e = 0xFF
		}
		edge[i] = uint16(r.IntN(2))<<15 | e<<7 | uint16(r.IntN(128))
	}
	for _, d := range codec.Distributions {
		cb, l := fitBlocks(edge, codec.Auto, d)
		checkEncode(t, c, "exponents 0 and 255 "+d.String(), edge, cb, l)
	}
}

// TestRealTensors: the real training tensors, every preset and distribution
// on the device (the emulation takes a few tensors of one file).
func TestRealTensors(t *testing.T) {
	c := testCodec(t)
	count := 0
	for _, f := range realTensorFiles(t) {
		for _, nt := range f.tensors {
			for _, ch := range codingChoices(t) {
				cb, l := fitBlocks(nt.Values, ch.p, ch.d)
				checkEncode(t, c, fmt.Sprintf("%s %s %s/%s", f.name, nt.Name, ch.p, ch.d), nt.Values, cb, l)
				count++
			}
		}
	}
	t.Logf("%d real tensor encodings identical to codec's, and decoded back", count)
}

// TestDecodeCorrupt: corrupted stream bytes make the GPU decode fail where
// codec's does, and decode the same values where codec's succeeds.
func TestDecodeCorrupt(t *testing.T) {
	c := testCodec(t)
	r := rand.New(rand.NewPCG(8, 9))
	src := testbf16.Gaussian(r, 65536+1000, 0.02)
	failures := 0
	trials := 40
	if emulated(t) {
		trials = 8
	}
	for trial := range trials {
		ct := corruptTensor(t, r, src, trial)
		want := make([]uint16, len(src))
		werr := codec.Decode(ct, want)
		got := make([]uint16, len(src))
		gerr := c.Decode(ct, got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("trial %d: codec decode error %v, gpu decode error %v", trial, werr, gerr)
		}
		if werr != nil {
			var de *DecodeError
			if !errors.As(gerr, &de) {
				t.Fatalf("trial %d: gpu error %v is not a DecodeError", trial, gerr)
			}
			failures++
			continue
		}
		if i := testbf16.FirstDiff(want, got); i >= 0 {
			t.Fatalf("trial %d: corrupt but decodable tensor: value %d: codec %#04x, gpu %#04x", trial, i, want[i], got[i])
		}
	}
	if failures == 0 {
		t.Fatalf("no trial produced a decode error: the test checks nothing")
	}
	t.Logf("%d of %d corruptions detected by both decoders, the rest decoded alike", failures, trials)

	// Structure problems are caught on the host before the device.
	ct := cpuEncode(t, src, fitCB(src), codec.Layout{Preset: codec.Clean, BlockSize: 65536, StreamBytes: 100, Version: codec.FormatVersion2})
	ct.Offsets[1]++
	if err := c.Decode(ct, make([]uint16, len(src))); err == nil {
		t.Fatal("decode accepted a wrong overflow offset")
	}
}

// corruptTensor is src encoded by codec under trial's codebook and layout,
// with up to 20 stream bytes flipped at random. Parametric codes are often
// incomplete (invalid prefixes exist); odd trials' tiny capacities make
// codes run past the end.
func corruptTensor(t *testing.T, r *rand.Rand, src []uint16, trial int) *codec.Tensor {
	cb, l := fit(src, codec.Auto, codec.Distributions[trial%3])
	if trial%2 == 1 {
		l.StreamBytes = 40
	}
	ct := cpuEncode(t, src, cb, l)
	for range 1 + r.IntN(20) {
		ct.Streams[r.IntN(len(ct.Streams))] ^= byte(1 + r.IntN(255))
	}
	return ct
}

func fitCB(src []uint16) codec.Codebook {
	cb, _ := fit(src, codec.Clean, codec.Gaussian)
	return cb
}

// TestHistograms: the GPU's sample and full histograms equal codec's.
func TestHistograms(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(10, 11))
	for _, n := range []int{1, 100, 4096, 4097, 12345, 300001} {
		if emulated(t) && n > 20000 {
			continue
		}
		src := testbf16.Gaussian(r, n, 0.3)
		buf, err := d.Alloc(2*n, Activations)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.UploadBF16(buf, src); err != nil {
			t.Fatal(err)
		}
		sample, err := d.SampleHistogram(buf, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := codec.SampleHistogram(src); sample != want {
			t.Fatalf("n=%d: sample histogram differs from codec's", n)
		}
		full, err := d.FullHistogram(buf, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := codec.FullHistogram(src); full != want {
			t.Fatalf("n=%d: full histogram differs from codec's", n)
		}
		if err := d.Free(buf); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeviceTensor: the device-resident path (Encode from a device buffer,
// SyncStatus, Download, Decode into a buffer), an overflow buffer too small
// (reported, then grown), and the memory accounting.
func TestDeviceTensor(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(12, 13))
	n := 2*65536 + 99
	src := testbf16.Gaussian(r, n, 0.01)
	for i := 0; i < n; i += 3 {
		src[i] ^= 0x3F80 // exponents far from the codebook's: spills
	}
	cb, l := fit(src, codec.Clean, codec.Gaussian)
	want := cpuEncode(t, src, cb, l)
	if len(want.Overflow) == 0 {
		t.Fatal("test tensor does not spill")
	}
	before := d.Memory()
	vals, err := d.Alloc(2*n, Weights)
	if err != nil {
		t.Fatal(err)
	}
	dt, err := d.NewTensor(n, l, cb, 16, Weights)
	if err != nil {
		t.Fatal(err)
	}
	dt.Name = "test weights"
	if err := d.UploadBF16(vals, src); err != nil {
		t.Fatal(err)
	}
	if err := d.Encode(dt, vals); err != nil {
		t.Fatal(err)
	}
	var oe *OverflowError
	if err := d.SyncStatus(); !errors.As(err, &oe) || oe.Needed != len(want.Overflow) {
		t.Fatalf("SyncStatus with a 16-byte overflow buffer: %v, want an OverflowError needing %d", err, len(want.Overflow))
	}
	if err := dt.GrowOverflow(len(want.Overflow)); err != nil {
		t.Fatal(err)
	}
	if err := d.Encode(dt, vals); err != nil {
		t.Fatal(err)
	}
	if err := d.SyncStatus(); err != nil {
		t.Fatal(err)
	}
	if dt.OverflowLen() != len(want.Overflow) || dt.StoredBytes() != want.StoredBytes() {
		t.Fatalf("overflow %d, stored %d; want %d, %d", dt.OverflowLen(), dt.StoredBytes(), len(want.Overflow), want.StoredBytes())
	}
	got := new(codec.Tensor)
	if err := dt.Download(got); err != nil {
		t.Fatal(err)
	}
	got.Stats = want.Stats
	if err := sameTensor(want, got); err != nil {
		t.Fatal(err)
	}
	out, err := d.Alloc(2*n, Activations)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(out, dt); err != nil {
		t.Fatal(err)
	}
	back := make([]uint16, n)
	if err := d.DownloadBF16(back, out); err != nil {
		t.Fatal(err)
	}
	if i := testbf16.FirstDiff(src, back); i >= 0 {
		t.Fatalf("device decode differs at %d", i)
	}
	m := d.Memory()
	if m.Current <= before.Current || m.ByCategory[Weights].Current < int64(n) || m.ByCategory[OverflowPool].Current < int64(len(want.Overflow)) {
		t.Fatalf("memory accounting: %+v", m)
	}
	for _, f := range []func() error{dt.Free, func() error { return d.Free(vals) }, func() error { return d.Free(out) }} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if after := d.Memory(); after.Current != before.Current || after.Peak < m.Current {
		t.Fatalf("after freeing: %+v, before %+v", after, before)
	}
}

// TestVersion1: the kernels code format version 2 only; Codec.Decode hands a
// version 1 tensor (from a file written before version 2) to the CPU
// decoder, and an encode or a device tensor in version 1 is refused.
func TestVersion1(t *testing.T) {
	c := testCodec(t)
	r := rand.New(rand.NewPCG(70, 71))
	src := testbf16.Gaussian(r, 65536+3001, 0.02)
	for i := 0; i < len(src); i += 97 {
		src[i] = uint16(r.Uint32()) // spills
	}
	v1, err := codec.Encode(src, codec.Options{Preset: codec.Auto, Dist: codec.Laplace, Version: codec.FormatVersion1})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]uint16, len(src))
	if err := c.Decode(v1, got); err != nil {
		t.Fatal(err)
	}
	if i := testbf16.FirstDiff(got, src); i >= 0 {
		t.Fatalf("version 1 decode: value %d is %#04x, want %#04x", i, got[i], src[i])
	}
	var dst codec.Tensor
	if err := c.Encode(&dst, src, v1.Codebook, v1.Layout); err == nil || !strings.Contains(err.Error(), "version 2 only") {
		t.Errorf("version 1 encode: %v, want a refusal", err)
	}
	if _, err := device(t).NewTensor(len(src), v1.Layout, v1.Codebook, 0, Weights); err == nil {
		t.Error("a version 1 device tensor was made")
	}
}
