package gpu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testbf16"
	"lcttop/internal/testtensors"
)

// plan3 is the codebook and layout codec.Encode chooses for src in format
// version 3.
func plan3(t testing.TB, src []uint16, p codec.Preset, d codec.Distribution) (codec.Codebook, codec.Layout) {
	t.Helper()
	cb, l, err := codec.Plan(src, codec.Options{Preset: p, Dist: d, Version: codec.FormatVersion3})
	if err != nil {
		t.Fatal(err)
	}
	return cb, l
}

// encode3 is src encoded by codec in format version 3 as pack plans it.
func encode3(t testing.TB, src []uint16, p codec.Preset, d codec.Distribution) *codec.Tensor {
	t.Helper()
	cb, l := plan3(t, src, p, d)
	return cpuEncode(t, src, cb, l)
}

// encode3With is src encoded by codec in format version 3 under the
// codebook of the plan and layout l.
func encode3With(t testing.TB, src []uint16, d codec.Distribution, l codec.Layout) *codec.Tensor {
	t.Helper()
	cb, _ := plan3(t, src, l.Preset, d)
	return cpuEncode(t, src, cb, l)
}

// checkDecode3 decodes ct on the device and wants src, every value written.
func checkDecode3(t *testing.T, c *Codec, what string, ct *codec.Tensor, src []uint16) {
	t.Helper()
	if ct.Layout.FormatVersion() != codec.FormatVersion3 {
		t.Fatalf("%s: a tensor of version %d", what, ct.Layout.FormatVersion())
	}
	back := make([]uint16, len(src))
	for i := range back {
		back[i] = 0xDEAD // poison: every value must be written
	}
	if err := c.Decode(ct, back); err != nil {
		t.Fatalf("%s: gpu decode: %v", what, err)
	}
	if i := testbf16.FirstDiff(src, back); i >= 0 {
		t.Fatalf("%s (n=%d, %s/%s, split %d, sign %v, signed %v): gpu decode differs at %d: want %#04x, got %#04x",
			what, len(src), ct.Layout.Preset, ct.Codebook.Dist, ct.Codebook.Split, ct.Layout.Sign, ct.Codebook.Signed, i, src[i], back[i])
	}
}

// check3 encodes src under cb and l on the device and wants codec's
// tensor, Stats and serialisation; then decodes codec's tensor on the
// device and wants src, every value written.
func check3(t *testing.T, c *Codec, what string, src []uint16, cb codec.Codebook, l codec.Layout) *codec.Tensor {
	t.Helper()
	want := cpuEncode(t, src, cb, l)
	got := new(codec.Tensor)
	if err := c.Encode(got, src, cb, l); err != nil {
		t.Fatalf("%s: gpu encode: %v", what, err)
	}
	if err := sameTensor(want, got); err != nil {
		t.Fatalf("%s (n=%d, %s/%s, C=%d, split %d, sign %v): gpu encode differs from codec: %v", what, len(src), l.Preset, cb.Dist, l.StreamBytes, cb.Split, l.Sign, err)
	}
	checkDecode3(t, c, what, want, src)
	return want
}

// check3Plan is check3 under the plan codec.Encode makes for p and d.
func check3Plan(t *testing.T, c *Codec, what string, src []uint16, p codec.Preset, d codec.Distribution) *codec.Tensor {
	t.Helper()
	cb, l := plan3(t, src, p, d)
	return check3(t, c, what, src, cb, l)
}

// TestCode3AllPatterns: all 65,536 patterns (shuffled, in order, and with
// one sign), every preset and distribution, decode on the device to
// themselves.
func TestCode3AllPatterns(t *testing.T) {
	c := testCodec(t)
	shuffled := allPatterns(3)
	plus := slices.Clone(shuffled)
	minus := slices.Clone(shuffled)
	for i := range plus {
		plus[i] &= 0x7FFF
		minus[i] |= 0x8000
	}
	for _, p := range codec.Presets {
		for _, d := range codec.Distributions {
			check3Plan(t, c, fmt.Sprintf("all patterns shuffled %s/%s", p, d), shuffled, p, d)
		}
	}
	ordered := testbf16.AllPatterns(nil)
	check3Plan(t, c, "all patterns in order", ordered, codec.Auto, codec.Empirical)
	for _, src := range [][]uint16{plus, minus} {
		if ct := check3Plan(t, c, "all patterns of one sign", src, codec.Auto, codec.Empirical); ct.Layout.Sign == codec.SignMixed {
			t.Fatal("values of one sign coded with a sign per value")
		}
	}
}

// TestCode3Sizes: partial last blocks and sizes below a stream row.
func TestCode3Sizes(t *testing.T) {
	c := testCodec(t)
	r := rand.New(rand.NewPCG(13, 14))
	sizes := []int{0, 1, 2, 7, 255, 256, 257, 4095, 4097, 65535, 65537, 131072 + 12345, 300007}
	for _, n := range sizes {
		src := testbf16.Gaussian(r, n, 0.05)
		for _, p := range []codec.Preset{codec.Clean, codec.High, codec.Auto} {
			check3Plan(t, c, fmt.Sprintf("gaussian n=%d %s", n, p), src, p, codec.Empirical)
		}
	}
}

// TestCode3Adversarial: every exponent escaped (long tails, the largest
// units), capacities of a few bytes, blocks with codebooks of their own,
// symbols that hold the sign.
func TestCode3Adversarial(t *testing.T) {
	c := testCodec(t)
	r := rand.New(rand.NewPCG(15, 16))
	n := 3*65536 + 777
	normal := testbf16.Gaussian(r, n, 0.01)
	uniform := make([]uint16, n)
	for i := range uniform {
		uniform[i] = uint16(r.Uint32())
	}
	// The normal values' codebook on uniform exponents: nearly all escaped.
	cb, l, err := codec.PlanOneCapacity(normal, codec.Options{Preset: codec.Clean, Dist: codec.Empirical, Version: codec.FormatVersion3})
	if err != nil {
		t.Fatal(err)
	}
	l.Sign = codec.SignMixed
	if ct := check3(t, c, "uniform exponents, normal codebook", uniform, cb, l); ct.Stats.SpillingStreams != ct.Stats.TotalStreams {
		t.Fatalf("uniform exponents: %d of %d streams have tails; the test wants every stream to", ct.Stats.SpillingStreams, ct.Stats.TotalStreams)
	}

	for _, capacity := range []int{2, 3, 9} {
		l := codec.Layout{Preset: codec.Auto, BlockSize: 65536, StreamBytes: capacity, Version: codec.FormatVersion3}
		for _, d := range []codec.Distribution{codec.Empirical, codec.Laplace} {
			cb, _ := plan3(t, normal, codec.Auto, d)
			check3(t, c, fmt.Sprintf("C=%d %s", capacity, d), normal, cb, l)
		}
	}

	// Blocks that differ in scale: codebooks of their own.
	mixed := slices.Clone(normal)
	copy(mixed[65536:], testbf16.Gaussian(r, n-65536, 3e-5))
	if ct := check3Plan(t, c, "codebooks per block", mixed, codec.Auto, codec.Empirical); len(ct.BlockCodebooks) == 0 {
		t.Fatal("no block of the mixed tensor has a codebook of its own")
	}

	// A sign that the exponent tells, fractions at random: the symbols
	// pay to hold the sign.
	few := make([]uint16, n)
	for i := range few {
		e := uint16(127 + r.IntN(2))
		few[i] = (e-127)<<15 | e<<7 | uint16(r.IntN(128))
	}
	if ct := check3Plan(t, c, "signed symbols", few, codec.Auto, codec.Empirical); !ct.Codebook.Signed || ct.Codebook.Split == 0 {
		t.Fatalf("a few values: split %d, signed %v; the test wants both", ct.Codebook.Split, ct.Codebook.Signed)
	}
}

// TestCode3RealTensors: every tensor of every shared file as pack codes
// it under every preset and distribution, decoded on the device.
func TestCode3RealTensors(t *testing.T) {
	c := testCodec(t)
	count := 0
	for _, f := range testtensors.Files(t) {
		for _, nt := range testtensors.LoadBF16(t, f) {
			for _, p := range codec.Presets {
				for _, d := range codec.Distributions {
					check3Plan(t, c, fmt.Sprintf("%s %s %s/%s", filepath.Base(f), nt.Name, p, d), nt.Values, p, d)
					count++
				}
			}
		}
	}
	t.Logf("%d real tensors decoded on the device as coded by codec", count)
}

// corrupt3 flips bits of ct's sections at the places edits names: four
// bytes each, the section, where (16 bits, scaled to its length) and the
// bits.
func corrupt3(c *codec.Tensor, edits []byte) *codec.Tensor {
	ct := *c
	ct.SF = slices.Clone(c.SF)
	ct.Streams = slices.Clone(c.Streams)
	ct.Overflow = slices.Clone(c.Overflow)
	ct.TailUnits = slices.Clone(c.TailUnits)
	ct.TailLens = slices.Clone(c.TailLens)
	for i := 0; i+4 <= len(edits); i += 4 {
		sec := [][]byte{ct.Streams, ct.Overflow, ct.SF, ct.TailLens, ct.TailUnits}[int(edits[i])%5]
		if len(sec) > 0 && edits[i+3] != 0 {
			at := int(edits[i+1]) | int(edits[i+2])<<8
			sec[at*len(sec)/65536] ^= edits[i+3]
		}
	}
	return &ct
}

// decodeAlike decodes ct with codec and on the device: both refuse it, the
// device with a DecodeError where the structure is sound, or both give the
// same values.
func decodeAlike(t *testing.T, c *Codec, ct *codec.Tensor) (refused bool) {
	t.Helper()
	want := make([]uint16, ct.N)
	werr := codec.Decode(ct, want)
	got := make([]uint16, ct.N)
	gerr := c.Decode(ct, got)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("codec decode error %v, gpu decode error %v", werr, gerr)
	}
	if werr != nil {
		var de *DecodeError
		if ct.CheckStructure() == nil && !errors.As(gerr, &de) {
			t.Fatalf("gpu error %v is not a DecodeError (codec: %v)", gerr, werr)
		}
		return true
	}
	if i := testbf16.FirstDiff(want, got); i >= 0 {
		t.Fatalf("decodable tensor: value %d: codec %#04x, gpu %#04x", i, want[i], got[i])
	}
	return false
}

// corruptSources are the tensors the corruption tests edit: heads and
// tails (a capacity per block, blocks differing in scale, codebooks of
// their own), and streams of a few bytes whose every code past them is in
// a tail; empirical and parametric codebooks.
func corruptSources(t testing.TB) []*codec.Tensor {
	r := rand.New(rand.NewPCG(40, 41))
	src := append(testbf16.Gaussian(r, 65536, 0.02), testbf16.Gaussian(r, 1000, 20)...)
	var out []*codec.Tensor
	for _, d := range []codec.Distribution{codec.Empirical, codec.Laplace} {
		out = append(out, encode3(t, src, codec.Auto, d))
		out = append(out, encode3With(t, src, d, codec.Layout{Preset: codec.Auto, BlockSize: 65536, StreamBytes: 6, Version: codec.FormatVersion3}))
	}
	return out
}

// TestDecode3Corrupt: flipped bits in heads, tails, residues, tail lengths
// and unit codes make the device refuse what codec refuses and decode the
// rest as codec does.
func TestDecode3Corrupt(t *testing.T) {
	c := testCodec(t)
	r := rand.New(rand.NewPCG(17, 18))
	sources := corruptSources(t)
	trials := 60
	refused := 0
	for trial := range trials {
		edits := make([]byte, 4*(1+r.IntN(8)))
		for i := range edits {
			edits[i] = byte(r.Uint32())
		}
		if decodeAlike(t, c, corrupt3(sources[trial%len(sources)], edits)) {
			refused++
		}
	}
	if refused == 0 || refused == trials {
		t.Fatalf("%d of %d corruptions refused: the test wants both kinds", refused, trials)
	}
	t.Logf("%d of %d corruptions refused by both decoders, the rest decoded alike", refused, trials)
}

// FuzzDecode3Corrupt is TestDecode3Corrupt with fuzzed edits.
//
//	go test -run '^$' -fuzz '^FuzzDecode3Corrupt$' -fuzztime 1000000x ./gpu/
func FuzzDecode3Corrupt(f *testing.F) {
	f.Add(uint8(0), []byte{0, 10, 0, 0x40})
	f.Add(uint8(1), []byte{1, 3, 0, 0xff, 2, 200, 9, 0x01})
	f.Add(uint8(2), []byte{3, 0, 0, 0x80, 4, 77, 1, 0x01})
	f.Add(uint8(3), []byte{1, 1, 0, 0x01, 0, 40, 0, 0x20})
	var sources []*codec.Tensor
	f.Fuzz(func(t *testing.T, which uint8, edits []byte) {
		if sources == nil {
			sources = corruptSources(t)
		}
		decodeAlike(t, testCodec(t), corrupt3(sources[int(which)%len(sources)], edits))
	})
}
