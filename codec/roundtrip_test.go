package codec

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"lcttop/internal/testbf16"
)

// allPatterns returns every BF16 bit pattern once, in a fixed shuffled order
// so that each stream sees a mix of exponents.
func allPatterns(shuffle bool) []uint16 {
	if !shuffle {
		return testbf16.AllPatterns(nil)
	}
	return testbf16.AllPatterns(rand.New(rand.NewPCG(7, 7)))
}

func forEachOption(f func(opt Options)) {
	for _, p := range Presets {
		for _, d := range Distributions {
			f(Options{Preset: p, Dist: d})
		}
	}
}

func TestAllPatternsRoundTrip(t *testing.T) {
	for _, shuffle := range []bool{false, true} {
		src := allPatterns(shuffle)
		forEachOption(func(opt Options) {
			checkRoundTrip(t, fmt.Sprintf("all patterns (shuffled %v)", shuffle), src, opt)
		})
	}
}

// adversarialTensors are inputs built to stress escapes, spills and odd exponents.
func adversarialTensors() map[string][]uint16 {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 70000 // two CLEAN blocks, the second partial
	m := map[string][]uint16{}
	nan := make([]uint16, n)
	for i := range nan {
		nan[i] = uint16(i&1)<<15 | 0x7F80 | uint16(1+i%127) // exponent 255, every nonzero payload
	}
	m["all NaN payloads"] = nan
	one := make([]uint16, n)
	for i := range one {
		one[i] = 0x3F80 | uint16(r.IntN(128)) | uint16(r.IntN(2))<<15
	}
	m["one exponent"] = one
	sub := make([]uint16, n)
	for i := range sub {
		sub[i] = uint16(r.IntN(1<<7)) | uint16(r.IntN(2))<<15 // exponent 0
	}
	m["subnormals"] = sub
	m["uniform bits"] = randomBF16(n, 11)
	// The sampled elements hold exponent 127; every other element has an
	// exponent the fitted code escapes, so every stream spills. N is not a
	// multiple of 4096 so that the sample is spread over all streams.
	const n2 = 150001
	spill := make([]uint16, n2)
	for i := range spill {
		spill[i] = uint16(1+r.IntN(100)) << 7
	}
	// Every block's own sample too, so that AUTO's C per block is as small.
	for k := range SampleSize {
		spill[sampleIndex(k, n2)] = 0x3F80
		for lo := 0; lo < n2; lo += 65536 {
			spill[lo+sampleIndex(k, min(65536, n2-lo))] = 0x3F80
		}
	}
	m["every stream spills"] = spill
	ext := make([]uint16, n)
	extremes := []uint16{0x0000, 0xFFFF, 0x7F7F, 0x0001, 0x8000, 0x7F80, 0xFF80, 0x0080}
	for i := range ext {
		ext[i] = extremes[i%len(extremes)]
	}
	m["alternating extremes"] = ext
	return m
}

func TestAdversarialRoundTrip(t *testing.T) {
	for name, src := range adversarialTensors() {
		forEachOption(func(opt Options) {
			enc := checkRoundTrip(t, name, src, opt)
			if name != "every stream spills" {
				return
			}
			// AUTO's capacity per block may let a short stream of the
			// partial last block fit; every stream of a full block spills.
			want := enc.Stats.TotalStreams
			if opt.Preset == Auto {
				want = Streams * (len(src) / 65536)
			}
			if enc.Stats.SpillingStreams < want {
				t.Errorf("%s %v/%v: %d of %d streams spill, want at least %d", name, opt.Preset, opt.Dist,
					enc.Stats.SpillingStreams, enc.Stats.TotalStreams, want)
			}
		})
	}
}

func TestLengthsRoundTrip(t *testing.T) {
	lengths := []int{0, 1, 255, 256, 257, 4095, 4096, 4097, 32767, 32768, 32769, 65535, 65536, 65537,
		3*65536 + 12345} // several blocks, the last partial
	for _, n := range lengths {
		src := gaussianBF16(n, uint64(n), 0.02)
		forEachOption(func(opt Options) {
			enc := checkRoundTrip(t, fmt.Sprintf("gaussian N=%d", n), src, opt)
			if got, want := max(len(enc.TailUnits), len(enc.Offsets)), enc.Layout.Blocks(n); got != want {
				t.Fatalf("N=%d %v: %d blocks, want %d", n, opt.Preset, got, want)
			}
		})
	}
}

// TestWorkersAgree checks that the bytes do not depend on the number of workers.
func TestWorkersAgree(t *testing.T) {
	src := gaussianBF16(5*65536+777, 5, 1e-3)
	copy(src[1000:], randomBF16(30000, 6)) // some spills too
	h := SampleHistogram(src)
	for _, opt := range []Options{{Preset: Clean, Dist: Gaussian}, {Preset: High, Dist: Empirical}, {Preset: Auto, Dist: Laplace}} {
		cb := FitCodebook(opt.Dist, &h)
		l := ChooseLayout(opt.Preset, &cb, &h)
		var want Tensor
		if err := (&Encoder{Workers: 1}).Encode(&want, src, cb, l); err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{0, 2, 3, 7, 1000} {
			var got Tensor
			if err := (&Encoder{Workers: w}).Encode(&got, src, cb, l); err != nil {
				t.Fatal(err)
			}
			if err := sameTensor(&got, &want); err != nil {
				t.Fatalf("%v Workers=%d: %v", opt, w, err)
			}
			if got.Stats != want.Stats {
				t.Fatalf("%v Workers=%d: stats differ", opt, w)
			}
			dst := make([]uint16, len(src))
			if err := (&Decoder{Workers: w}).Decode(&got, dst); err != nil {
				t.Fatal(err)
			}
			if i := testbf16.FirstDiff(dst, src); i >= 0 {
				t.Fatalf("%v Workers=%d: value %d differs", opt, w, i)
			}
		}
	}
}

// TestEncoderReuse encodes tensors of different sizes and kinds into one
// destination: stale bytes from a larger earlier tensor must not leak.
func TestEncoderReuse(t *testing.T) {
	var e Encoder
	var d Decoder
	var dst Tensor
	inputs := [][]uint16{randomBF16(200000, 1), gaussianBF16(70000, 2, 1), gaussianBF16(300, 3, 1), randomBF16(65536, 4), nil}
	for i, src := range inputs {
		h := SampleHistogram(src)
		cb := FitCodebook(Empirical, &h)
		l := ChooseLayout(Auto, &cb, &h)
		if err := e.Encode(&dst, src, cb, l); err != nil {
			t.Fatal(err)
		}
		if err := sameTensor(&dst, reference(src, &dst)); err != nil {
			t.Fatalf("input %d: reused encoder differs from the reference: %v", i, err)
		}
		out := make([]uint16, len(src))
		if err := d.Decode(&dst, out); err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		if j := testbf16.FirstDiff(out, src); j >= 0 {
			t.Fatalf("input %d: value %d differs", i, j)
		}
	}
}

func TestEncodeRejectsBadInput(t *testing.T) {
	src := gaussianBF16(1000, 1, 1)
	h := SampleHistogram(src)
	good := FitCodebook(Empirical, &h)
	layout := ChooseLayout(Clean, &good, &h)
	bad := good
	bad.EscLen = 0
	var e Encoder
	if err := e.Encode(&Tensor{}, src, bad, layout); err == nil {
		t.Error("encode accepted a codebook with escLen 0")
	}
	if err := e.Encode(&Tensor{}, src, good, Layout{Preset: Clean, BlockSize: 1000, StreamBytes: 100}); err == nil {
		t.Error("encode accepted block size 1000")
	}
	if _, err := Encode(src, Options{Preset: 9}); err == nil {
		t.Error("encode accepted preset 9")
	}
	if _, err := Encode(src, Options{Dist: 9}); err == nil {
		t.Error("encode accepted distribution 9")
	}
	if _, err := Encode(src, Options{Version: 4}); err == nil {
		t.Error("encode accepted format version 4")
	}
}
