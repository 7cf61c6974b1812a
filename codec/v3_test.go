package codec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"lcttop/internal/testbf16"
)

// v3 is opt in format version 3.
func v3(p Preset, d Distribution) Options {
	return Options{Preset: p, Dist: d, Version: FormatVersion3}
}

// TestResidues: packing and unpacking residues of every width and split,
// from any starting value, matches a bit-by-bit transcription.
func TestResidues(t *testing.T) {
	src := randomBF16(1000, 81)
	for k := uint(0); k <= MaxSplit; k++ {
		for _, signed := range []bool{false, true} {
			w := 7 - k
			if signed {
				w++
			}
			var want []byte
			for _, v := range src {
				r := residueOf(v, k, w)
				for i := int(w) - 1; i >= 0; i-- {
					want = append(want, byte(r>>uint(i)&1))
				}
			}
			packed := packBitList(want)
			got := make([]byte, residueBytes(len(src), int(w)))
			packResidues(got, src, k, w)
			if !bytes.Equal(got, packed) {
				t.Fatalf("k=%d w=%d: packed residues differ at byte %d", k, w, testbf16.FirstDiff(got, packed))
			}
			for _, first := range []int{0, 1, 7, 8, 9, 64, 999} {
				for _, n := range []int{0, 1, 8, 9, 1000 - first} {
					n = min(n, len(src)-first)
					out := make([]uint16, n)
					s := SignMixed
					if !signed {
						s = SignPlus
					}
					var rv [256]uint16
					residueTable(&rv, k, w, s)
					var noSymbols [Streams]uint16
					joinRest(out, &noSymbols, 0, got, first, w, &rv)
					for i, v := range out {
						keep := uint16(1)<<(7-k) - 1
						if signed {
							keep |= 0x8000
						}
						if v != src[first+i]&keep {
							t.Fatalf("k=%d w=%d first %d n %d: value %d is %#04x, want %#04x", k, w, first, n, i, v, src[first+i]&keep)
						}
					}
				}
			}
		}
	}
}

func TestSignOf(t *testing.T) {
	for _, c := range []struct {
		src  []uint16
		want Sign
	}{
		{nil, SignPlus},
		{[]uint16{0, 1, 0x7FFF}, SignPlus},
		{[]uint16{0x8000, 0xFFFF, 0x8001, 0x8000, 0x8000}, SignMinus},
		{[]uint16{0x8000, 0, 0, 0, 0, 0, 0, 0, 0}, SignMixed},
		{[]uint16{0, 0, 0, 0, 0, 0, 0, 0, 0x8000}, SignMixed},
	} {
		if got := SignOf(c.src); got != c.want {
			t.Errorf("SignOf(%#04x) = %v, want %v", c.src, got, c.want)
		}
	}
}

// splitCases are the codebook alphabets of version 3: every split, unsigned
// and (k ≤ 2) with the sign in the symbol.
func splitCases() (cases []struct {
	k      uint8
	signed bool
}) {
	for _, signed := range []bool{false, true} {
		for k := uint8(0); k <= MaxSplit; k++ {
			if signed && k == MaxSplit {
				continue
			}
			cases = append(cases, struct {
				k      uint8
				signed bool
			}{k, signed})
		}
	}
	return cases
}

// checkV3 encodes src with cb under every preset and checks it as
// checkRoundTrip does: the reference's bytes, decoding, parsing, stats.
func checkV3(t *testing.T, name string, src []uint16, cb Codebook, sign Sign) {
	t.Helper()
	var e Encoder
	for _, p := range Presets {
		l := presetLayouts[p].WithVersion(FormatVersion3)
		if p == Auto {
			h := FullSplitHistogram(src)
			l = ChooseSplitLayout(p, &cb, &h).WithVersion(FormatVersion3)
		}
		l.Sign = sign
		for _, perBlock := range []bool{false, true} {
			if perBlock && (p != Auto || len(src) == 0) {
				continue
			}
			l.PerBlock = perBlock
			l.BlockCodebooks = cb.Dist == Empirical && perBlock
			var enc Tensor
			if err := e.Encode(&enc, src, cb, l); err != nil {
				t.Fatalf("%s %v per block %v: encode: %v", name, p, perBlock, err)
			}
			what := fmt.Sprintf("%s %v per block %v (split %d signed %v, %d block codebooks)", name, p, perBlock, enc.Codebook.Split, enc.Codebook.Signed, len(enc.BlockCodebooks))
			if err := sameTensor(&enc, reference(src, &enc)); err != nil {
				t.Fatalf("%s: differs from the reference: %v", what, err)
			}
			got, err := DecodeAlloc(&enc)
			if err != nil {
				t.Fatalf("%s: decode: %v", what, err)
			}
			if i := testbf16.FirstDiff(got, src); i >= 0 {
				t.Fatalf("%s: value %d is %#04x, want %#04x", what, i, got[i], src[i])
			}
			bin, err := enc.MarshalBinary()
			if err != nil {
				t.Fatalf("%s: marshal: %v", what, err)
			}
			if len(bin) != enc.StoredBytes() || enc.Stats.StoredBytes != len(bin) {
				t.Fatalf("%s: serialisation %d bytes, StoredBytes %d, stats %d", what, len(bin), enc.StoredBytes(), enc.Stats.StoredBytes)
			}
			parsed, err := ParseTensor(bin)
			if err != nil {
				t.Fatalf("%s: parse: %v", what, err)
			}
			if err := sameTensor(&enc, parsed); err != nil {
				t.Fatalf("%s: parsed differs: %v", what, err)
			}
			if err := parsed.ComputeStats(); err != nil {
				t.Fatal(err)
			}
			if parsed.Stats != enc.Stats {
				t.Fatalf("%s: stats from decoding differ:\n%+v\n%+v", what, parsed.Stats, enc.Stats)
			}
			checkStatsInvariants3(t, what, src, &enc)
		}
	}
}

// TestAllPatternsEverySplit: all 65,536 BF16 patterns round-trip under the
// codebooks of every split, signed and not, and every preset.
func TestAllPatternsEverySplit(t *testing.T) {
	for _, shuffle := range []bool{false, true} {
		src := allPatterns(shuffle)
		h := FullSplitHistogram(src)
		for _, c := range splitCases() {
			cb := FitSplitCodebookK(&h, c.k, c.signed)
			checkV3(t, fmt.Sprintf("all patterns (shuffled %v)", shuffle), src, cb, SignMixed)
		}
	}
}

// TestSplitCodebooksOnData: skewed data under every split, both with the
// codebook fitted to it and with one fitted elsewhere (many escapes).
func TestSplitCodebooksOnData(t *testing.T) {
	src := gaussianBF16(3*65536+777, 91, 0.02)
	copy(src[70000:], randomBF16(5000, 92))
	other := gaussianBF16(4096, 93, 1e6)
	h, ho := FullSplitHistogram(src), FullSplitHistogram(other)
	for _, c := range splitCases() {
		checkV3(t, "gaussian", src, FitSplitCodebookK(&h, c.k, c.signed), SignMixed)
		checkV3(t, "gaussian, codebook of other data", src, FitSplitCodebookK(&ho, c.k, c.signed), SignMixed)
	}
}

// TestConstantSign: values of one sign store none (ResidueBits one less),
// and round-trip under every split; the encoder refuses a sign the values
// do not all have.
func TestConstantSign(t *testing.T) {
	plus := gaussianBF16(100000, 95, 1e-4)
	for i := range plus {
		plus[i] &^= 0x8000
	}
	plus[17] = 0x7FC1 // a NaN, positive
	plus[18] = 0      // +0
	minus := slices.Clone(plus)
	for i := range minus {
		minus[i] |= 0x8000
	}
	for _, c := range []struct {
		src  []uint16
		sign Sign
	}{{plus, SignPlus}, {minus, SignMinus}} {
		if got := SignOf(c.src); got != c.sign {
			t.Fatalf("SignOf = %v, want %v", got, c.sign)
		}
		h := FullSplitHistogram(c.src)
		for k := uint8(0); k <= MaxSplit; k++ {
			cb := FitSplitCodebookK(&h, k, false)
			checkV3(t, fmt.Sprintf("sign %v", c.sign), c.src, cb, c.sign)
		}
		enc, err := Encode(c.src, v3(Auto, Empirical))
		if err != nil {
			t.Fatal(err)
		}
		if enc.Layout.Sign != c.sign || ResidueBits(&enc.Codebook, enc.Layout.Sign) != 7-int(enc.Codebook.Split) {
			t.Fatalf("sign %v: encoded with sign %v, %d residue bits", c.sign, enc.Layout.Sign, ResidueBits(&enc.Codebook, enc.Layout.Sign))
		}
	}
	mixed := slices.Clone(plus)
	mixed[99999] |= 0x8000
	h := FullSplitHistogram(mixed)
	cb := FitSplitCodebookK(&h, 1, false)
	l := presetLayouts[Clean].WithVersion(FormatVersion3)
	l.Sign = SignPlus
	var e Encoder
	if err := e.Encode(&Tensor{}, mixed, cb, l); err == nil || !strings.Contains(err.Error(), "every sign is plus") {
		t.Fatalf("encode of a negative value under sign plus: %v", err)
	}
}

// TestV3Adversarial: the tensors built to stress escapes and spills, and
// some built for version 3's tails and codebooks per block, round-trip
// under every preset and distribution in version 3.
func TestV3Adversarial(t *testing.T) {
	m := adversarialTensors()
	r := rand.New(rand.NewPCG(97, 98))
	// Blocks of very different data: one codebook each pays.
	var mix []uint16
	mix = append(mix, gaussianBF16(65536, 99, 1e-6)...)
	mix = append(mix, gaussianBF16(65536, 100, 1e6)...)
	mix = append(mix, randomBF16(65536, 101)...)
	mix = append(mix, slices.Repeat([]uint16{0x3F80}, 30000)...)
	m["blocks of other scales"] = mix
	// Long tails: the codebook fitted to zeros, the values anything.
	long := randomBF16(65536+1000, 102)
	for k := range SampleSize {
		long[sampleIndex(k, len(long))] = 0
	}
	m["long tails"] = long
	short := make([]uint16, 300)
	for i := range short {
		short[i] = uint16(r.Uint32())
	}
	m["300 values"] = short
	m["one value"] = []uint16{0xFF80}
	for name, src := range m {
		for _, p := range Presets {
			for _, d := range Distributions {
				enc := checkRoundTrip(t, name, src, v3(p, d))
				if name == "blocks of other scales" && d == Empirical && len(enc.BlockCodebooks) == 0 {
					t.Errorf("%s %v: no codebooks per block", name, p)
				}
			}
		}
	}
}

// TestLongTailUnits: a block whose streams' codes far outrun a small head
// gets a large tail unit, and the length fields' limit holds.
func TestLongTailUnits(t *testing.T) {
	src := randomBF16(65536, 103)
	h := FullSplitHistogram(make([]uint16, 100)) // fitted to zeros: nearly everything escapes
	cb := FitSplitCodebookK(&h, 0, false)
	for _, c := range []int{2, 3, 17, 100, 512} {
		l := Layout{Preset: Auto, BlockSize: 65536, StreamBytes: c, Version: FormatVersion3}
		var e Encoder
		var enc Tensor
		if err := e.Encode(&enc, src, cb, l); err != nil {
			t.Fatal(err)
		}
		if err := sameTensor(&enc, reference(src, &enc)); err != nil {
			t.Fatalf("C=%d: %v", c, err)
		}
		got, err := DecodeAlloc(&enc)
		if err != nil || testbf16.FirstDiff(got, src) >= 0 {
			t.Fatalf("C=%d: decode: %v", c, err)
		}
		t.Logf("C=%d: tail unit code %d, %d tail bytes", c, enc.TailUnits[0], len(enc.Overflow))
		if c == 2 && enc.TailUnits[0] < 7 {
			t.Fatalf("C=2: unit code %d, want a large unit", enc.TailUnits[0])
		}
	}
}

// TestLeastBytesV3 checks AUTO's capacity search against trying every C.
func TestLeastBytesV3(t *testing.T) {
	r := rand.New(rand.NewPCG(104, 105))
	for trial := range 300 {
		var x [Streams]uint32
		mean, spread := 16+r.IntN(3000), 1+r.IntN(400)
		for j := range x {
			x[j] = uint32(max(0, min(maxStreamCodeBits, mean+r.IntN(2*spread)-spread)))
		}
		if trial%7 == 0 {
			x[r.IntN(Streams)] = uint32(r.IntN(maxStreamCodeBits + 1))
		}
		n := 65536
		if trial%3 == 0 {
			n = 65536 + 1 + r.IntN(65535) // the partial second block
		}
		l := Layout{Preset: Auto, BlockSize: 65536, Version: FormatVersion3}
		b := l.Blocks(n) - 1
		best, least := 0, 0
		for c := autoMinStreamBytes; c <= autoMaxStreamBytes; c++ {
			if s := blockStoredBytes(&x, l.scaledStreamBytes(n, b, c)); best == 0 || s < least {
				best, least = c, s
			}
		}
		if got := leastBytesV3(&x, l, n, b); got != best {
			t.Fatalf("trial %d: C %d (%d bytes), trying every C gives %d (%d bytes)", trial, got, blockStoredBytes(&x, l.scaledStreamBytes(n, b, got)), best, least)
		}
	}
}

// TestTailLenFields: the 5-bit fields read back what was written, at every
// position, and neighbours do not disturb each other.
func TestTailLenFields(t *testing.T) {
	r := rand.New(rand.NewPCG(106, 107))
	lens := make([]byte, tailTableBytes)
	want := make([]int, Streams)
	for j := range want {
		want[j] = r.IntN(tailLenMax + 1)
		putTailLen(lens, j, want[j])
	}
	for j := range want {
		if got := getTailLen(lens, j); got != want[j] {
			t.Fatalf("field %d: %d, want %d", j, got, want[j])
		}
	}
}

// TestV3ParseTruncated: every shorter prefix of a version 3 serialisation
// is refused with an error, and so is one byte more.
func TestV3ParseTruncated(t *testing.T) {
	enc, bin := v3Subject(t)
	for n := 0; n < len(bin); n += 1 + n/50 {
		if _, err := ParseTensor(bin[:n]); err == nil {
			t.Fatalf("a %d-byte prefix of %d parsed", n, len(bin))
		}
	}
	if _, err := ParseTensor(append(slices.Clone(bin), 0)); err == nil {
		t.Fatal("a byte more parsed")
	}
	if enc.StoredBytes() != len(bin) {
		t.Fatal("StoredBytes differs from the serialisation's length")
	}
}

// v3Subject is a version 3 tensor with every section: codebooks per block,
// capacities per block, tails, mixed signs.
func v3Subject(t *testing.T) (*Tensor, []byte) {
	t.Helper()
	src := gaussianBF16(65536+6000, 108, 0.05)
	copy(src[65536:], gaussianBF16(6000, 109, 1e8))
	enc, err := Encode(src, v3(Auto, Empirical))
	if err != nil {
		t.Fatal(err)
	}
	if len(enc.BlockCodebooks) == 0 || !enc.Layout.PerBlock || len(enc.Overflow) == 0 || enc.Layout.Sign != SignMixed {
		t.Fatalf("subject lacks a section: %d block codebooks, per block %v, %d tail bytes, sign %v", len(enc.BlockCodebooks), enc.Layout.PerBlock, len(enc.Overflow), enc.Layout.Sign)
	}
	bin, err := enc.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return enc, bin
}

// TestV3Corruption: every single-bit flip of a version 3 serialisation's
// header, codebooks and tables, and of a sample of its other bytes, is
// refused or decodes (never a panic); a flip in the fixed header is always
// refused or decodes to the same values, and of the flips in the codebooks
// and tables fewer than 1% make a tensor that decodes to other values
// (which only the .lct file's CRCs can then catch).
func TestV3Corruption(t *testing.T) {
	enc, bin := v3Subject(t)
	src, err := DecodeAlloc(enc)
	if err != nil {
		t.Fatal(err)
	}
	tables := len(bin) - len(enc.SF) - len(enc.Streams) - len(enc.Overflow)
	other, flips := 0, 0
	for i := 0; i < len(bin); i++ {
		if i >= tables && i%97 != 0 {
			continue
		}
		for bit := range 8 {
			b := slices.Clone(bin)
			b[i] ^= 1 << bit
			got, err := ParseTensor(b)
			if err != nil {
				continue
			}
			vals, err := DecodeAlloc(got)
			if err != nil || testbf16.FirstDiff(vals, src) < 0 {
				continue
			}
			switch {
			case i < fixedHeaderBytes:
				t.Errorf("byte %d bit %d of the fixed header: parsed and decoded to other values", i, bit)
			case i < tables:
				other++
			}
		}
		if i < tables {
			flips += 8
		}
	}
	t.Logf("%d of %d flips in the header and tables decoded to other values", other, flips)
	if other*100 >= flips {
		t.Errorf("%d of %d flips in the header and tables decoded to other values", other, flips)
	}
}

// TestV3HeaderErrors: damaged header fields are named.
func TestV3HeaderErrors(t *testing.T) {
	_, bin := v3Subject(t)
	for _, c := range []struct {
		name string
		edit func(b []byte)
		want string
	}{
		{"residue byte", func(b []byte) { b[24] = 0x10 }, "residue byte (byte 24) 0x10"},
		{"reserved 25", func(b []byte) { b[25] = 1 }, "reserved byte 25"},
		{"reserved 31", func(b []byte) { b[31] = 1 }, "reserved byte 31"},
		{"flag bit 1", func(b []byte) { b[29] |= 2 }, "flags (byte 29)"},
		{"empirical escLen", func(b []byte) { b[7] = 3 }, "empirical codebook with escLen"},
		{"derived empirical", func(b []byte) { b[29] |= flagDerivedCodebook }, "derived codebook for an empirical codebook"},
		{"signed split 3", func(b []byte) { b[24] = 3 | signCodedField<<2 }, "split 3 with the sign in the symbols"},
	} {
		b := slices.Clone(bin)
		c.edit(b)
		if _, err := ParseTensor(b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestV3Ratios: on skewed data version 3 beats version 2 (the free bit of
// positive values alone is an eighth of the sign-fraction bytes).
func TestV3Ratios(t *testing.T) {
	src := gaussianBF16(4*65536, 110, 1e-3)
	for i := range src {
		src[i] &^= 0x8000
	}
	e2, err := Encode(src, Options{Preset: Auto, Dist: Empirical, Version: FormatVersion2})
	if err != nil {
		t.Fatal(err)
	}
	e3, err := Encode(src, v3(Auto, Empirical))
	if err != nil {
		t.Fatal(err)
	}
	if e3.Stats.Ratio < e2.Stats.Ratio*(16/(16-1.0))-0.01 {
		t.Fatalf("version 3 ratio %.4f, version 2 %.4f: the free bit is missing", e3.Stats.Ratio, e2.Stats.Ratio)
	}
}
