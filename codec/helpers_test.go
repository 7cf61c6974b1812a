package codec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"lcttop/internal/testbf16"
)

// gaussianBF16 returns n BF16 values of a normal distribution with standard
// deviation sigma (truncated from float32), deterministic in seed.
func gaussianBF16(n int, seed uint64, sigma float64) []uint16 {
	return testbf16.Gaussian(rand.New(rand.NewPCG(seed, 0x6c6374)), n, sigma)
}

// randomBF16 returns n uniformly random bit patterns.
func randomBF16(n int, seed uint64) []uint16 {
	r := rand.New(rand.NewPCG(seed, 0x726e64))
	out := make([]uint16, n)
	for i := range out {
		out[i] = uint16(r.Uint32())
	}
	return out
}

// sameTensor reports the first difference between two encoded tensors, Stats aside.
func sameTensor(a, b *Tensor) error {
	switch {
	case a.N != b.N:
		return fmt.Errorf("N %d vs %d", a.N, b.N)
	case a.Layout != b.Layout:
		return fmt.Errorf("layout %+v vs %+v", a.Layout, b.Layout)
	case a.Codebook != b.Codebook:
		return fmt.Errorf("codebooks differ: %s vs %s", codebookSummary(&a.Codebook), codebookSummary(&b.Codebook))
	case a.CompactCodebook != b.CompactCodebook:
		return fmt.Errorf("compact codebook %v vs %v", a.CompactCodebook, b.CompactCodebook)
	case a.DerivedCodebook != b.DerivedCodebook:
		return fmt.Errorf("derived codebook %v vs %v", a.DerivedCodebook, b.DerivedCodebook)
	case !slices.Equal(a.BlockBytes, b.BlockBytes):
		return fmt.Errorf("capacities per block differ: %v vs %v", a.BlockBytes, b.BlockBytes)
	case !bytes.Equal(a.SF, b.SF):
		return fmt.Errorf("sf bytes differ")
	case !bytes.Equal(a.Streams, b.Streams):
		return fmt.Errorf("stream areas differ at byte %d", testbf16.FirstDiff(a.Streams, b.Streams))
	case !bytes.Equal(a.Bitmaps, b.Bitmaps):
		return fmt.Errorf("bitmaps differ at byte %d", testbf16.FirstDiff(a.Bitmaps, b.Bitmaps))
	case !slices.Equal(a.Offsets, b.Offsets):
		return fmt.Errorf("offsets differ: %v vs %v", a.Offsets, b.Offsets)
	case !bytes.Equal(a.Overflow, b.Overflow):
		return fmt.Errorf("overflow areas differ at byte %d (lengths %d, %d)", testbf16.FirstDiff(a.Overflow, b.Overflow), len(a.Overflow), len(b.Overflow))
	case !bytes.Equal(a.TailUnits, b.TailUnits):
		return fmt.Errorf("tail units differ: %v vs %v", a.TailUnits, b.TailUnits)
	case !bytes.Equal(a.TailLens, b.TailLens):
		return fmt.Errorf("tail lengths differ at byte %d", testbf16.FirstDiff(a.TailLens, b.TailLens))
	case !slices.Equal(a.BlockCodebooks, b.BlockCodebooks):
		return fmt.Errorf("codebooks per block differ (%d, %d)", len(a.BlockCodebooks), len(b.BlockCodebooks))
	}
	return nil
}

// reference is the reference transcription's encoding with enc's choices
// (codebooks, capacities, sign), by its version.
func reference(src []uint16, enc *Tensor) *Tensor {
	if enc.Layout.v3() {
		return referenceEncode3(src, enc.Codebook, enc.BlockCodebooks, enc.Layout, enc.BlockBytes)
	}
	return referenceEncode(src, enc.Codebook, enc.Layout)
}

// checkRoundTrip encodes src with opt and checks everything a caller relies
// on: the bytes equal the reference transcription of format.md, a second
// encode gives the same bytes, decoding restores src, the serialisation
// parses back to the same tensor and its length is StoredBytes, and the
// statistics recomputed from the parsed tensor equal the encoder's.
func checkRoundTrip(t *testing.T, name string, src []uint16, opt Options) *Tensor {
	t.Helper()
	enc, err := Encode(src, opt)
	if err != nil {
		t.Fatalf("%s %v/%v: encode: %v", name, opt.Preset, opt.Dist, err)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s %v/%v (N=%d): %s", name, opt.Preset, opt.Dist, len(src), fmt.Sprintf(format, args...))
	}
	ref := reference(src, enc)
	if err := sameTensor(enc, ref); err != nil {
		fail("fast encoder differs from the reference: %v", err)
	}
	again, err := Encode(src, opt)
	if err != nil {
		fail("second encode: %v", err)
	}
	if err := sameTensor(enc, again); err != nil {
		fail("encoding is not deterministic: %v", err)
	}
	got, err := DecodeAlloc(enc)
	if err != nil {
		fail("decode: %v", err)
	}
	if i := testbf16.FirstDiff(got, src); i >= 0 {
		fail("decoded value %d is %#04x, want %#04x", i, got[i], src[i])
	}
	bin, err := enc.MarshalBinary()
	if err != nil {
		fail("marshal: %v", err)
	}
	if len(bin) != enc.StoredBytes() || enc.Stats.StoredBytes != len(bin) {
		fail("serialisation is %d bytes, StoredBytes %d, Stats.StoredBytes %d", len(bin), enc.StoredBytes(), enc.Stats.StoredBytes)
	}
	parsed, err := ParseTensor(bin)
	if err != nil {
		fail("parse: %v", err)
	}
	if err := sameTensor(enc, parsed); err != nil {
		fail("parsed tensor differs: %v", err)
	}
	if err := parsed.ComputeStats(); err != nil {
		fail("compute stats: %v", err)
	}
	if parsed.Stats != enc.Stats {
		fail("stats from decoding differ from the encoder's:\n%+v\n%+v", parsed.Stats, enc.Stats)
	}
	checkStatsInvariants(t, name, src, enc)
	if opt.Version == 0 {
		for _, v := range []int{FormatVersion1, FormatVersion2, FormatVersion3} {
			if v != FormatVersion {
				checkVersion(t, name, src, opt, v)
			}
		}
	}
	return enc
}

// checkVersion encodes src as format version v writes it (its codebook fit
// and layout): the bytes equal the reference, decode back, and serialise
// under version byte v.
func checkVersion(t *testing.T, name string, src []uint16, opt Options, v int) {
	t.Helper()
	opt.Version = v
	enc, err := Encode(src, opt)
	if err != nil {
		t.Fatalf("%s version %d: encode: %v", name, v, err)
	}
	if enc.Layout.FormatVersion() != v {
		t.Fatalf("%s version %d: layout %+v", name, v, enc.Layout)
	}
	if err := sameTensor(enc, reference(src, enc)); err != nil {
		t.Fatalf("%s version %d: fast encoder differs from the reference: %v", name, v, err)
	}
	if enc.Layout.v3() {
		checkStatsInvariants3(t, name, src, enc)
	}
	got, err := DecodeAlloc(enc)
	if err != nil {
		t.Fatalf("%s version %d: decode: %v", name, v, err)
	}
	if i := testbf16.FirstDiff(got, src); i >= 0 {
		t.Fatalf("%s version %d: decoded value %d is %#04x, want %#04x", name, v, i, got[i], src[i])
	}
	bin, err := enc.MarshalBinary()
	if err != nil {
		t.Fatalf("%s version %d: marshal: %v", name, v, err)
	}
	if int(bin[4]) != v {
		t.Fatalf("%s version %d: version byte %d", name, v, bin[4])
	}
	parsed, err := ParseTensor(bin)
	if err != nil {
		t.Fatalf("%s version %d: parse: %v", name, v, err)
	}
	if err := sameTensor(enc, parsed); err != nil {
		t.Fatalf("%s version %d: parsed tensor differs: %v", name, v, err)
	}
	if err := parsed.ComputeStats(); err != nil {
		t.Fatalf("%s version %d: compute stats: %v", name, v, err)
	}
	if parsed.Stats != enc.Stats {
		t.Fatalf("%s version %d: stats from decoding differ from the encoder's", name, v)
	}
}

// checkStatsInvariants checks the encoder's counters against direct counts.
func checkStatsInvariants(t *testing.T, name string, src []uint16, enc *Tensor) {
	t.Helper()
	if enc.Layout.v3() {
		checkStatsInvariants3(t, name, src, enc)
		return
	}
	s := &enc.Stats
	full := FullHistogram(src)
	escaped := 0
	for _, v := range src {
		if enc.Codebook.Lengths[byte(v>>7)] == 0 {
			escaped++
		}
	}
	spilling := 0
	for _, x := range enc.Bitmaps {
		for ; x != 0; x &= x - 1 {
			spilling++
		}
	}
	switch {
	case s.Histogram != full:
		t.Fatalf("%s: stats histogram differs from the full histogram", name)
	case s.N != len(src) || s.StoredBytes != enc.StoredBytes():
		t.Fatalf("%s: stats N %d StoredBytes %d", name, s.N, s.StoredBytes)
	case s.Escaped != escaped:
		t.Fatalf("%s: stats escaped %d, counted %d", name, s.Escaped, escaped)
	case s.SpillingStreams != spilling:
		t.Fatalf("%s: stats spilling streams %d, bitmaps say %d", name, s.SpillingStreams, spilling)
	case s.Spilled != len(enc.Overflow)-spilling:
		t.Fatalf("%s: stats spilled %d, overflow %d bytes with %d markers", name, s.Spilled, len(enc.Overflow), spilling)
	case len(src) > 0 && s.Ratio != float64(2*len(src))/float64(enc.StoredBytes()):
		t.Fatalf("%s: ratio %v", name, s.Ratio)
	case s.UsedBits > s.AllocatedBits+1e-9 && s.Spilled == 0:
		t.Fatalf("%s: used %v bits per exponent, more than the %v allocated", name, s.UsedBits, s.AllocatedBits)
	}
}

// checkStatsInvariants3 is checkStatsInvariants for version 3.
func checkStatsInvariants3(t *testing.T, name string, src []uint16, enc *Tensor) {
	t.Helper()
	s := &enc.Stats
	escaped, tailed := 0, 0
	for i, v := range src {
		c := enc.blockCodebook(i / enc.Layout.BlockSize).symCode()
		if c.lens[c.symbol(v)] == 0 {
			escaped++
		}
	}
	for b := range enc.TailUnits {
		for j := range Streams {
			if getTailLen(enc.TailLens[b*tailTableBytes:], j) > 0 {
				tailed++
			}
		}
	}
	switch {
	case s.Histogram != FullHistogram(src):
		t.Fatalf("%s: stats histogram differs from the full histogram", name)
	case s.N != len(src) || s.StoredBytes != enc.StoredBytes():
		t.Fatalf("%s: stats N %d StoredBytes %d", name, s.N, s.StoredBytes)
	case s.Escaped != escaped:
		t.Fatalf("%s: stats escaped %d, counted %d", name, s.Escaped, escaped)
	case s.SpillingStreams != tailed:
		t.Fatalf("%s: stats spilling streams %d, the tail lengths say %d", name, s.SpillingStreams, tailed)
	case len(src) > 0 && s.Ratio != float64(2*len(src))/float64(enc.StoredBytes()):
		t.Fatalf("%s: ratio %v", name, s.Ratio)
	}
}

// codebookSummary names a codebook's kind and its coded lengths, briefly.
func codebookSummary(cb *Codebook) string {
	c := cb.symCode()
	var coded []string
	for s, l := range c.lens {
		if l != 0 {
			coded = append(coded, fmt.Sprintf("%d:%d", s, l))
		}
	}
	return fmt.Sprintf("%v split %d signed %v shift %d shape %d esc %v codes %v", cb.Dist, cb.Split, cb.Signed, cb.Shift, cb.Shape, c.esc[:c.escapes()], coded)
}
