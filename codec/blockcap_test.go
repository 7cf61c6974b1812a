package codec

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"lcttop/internal/testbf16"
)

// blocksOfScales is a tensor whose blocks differ wildly: every BF16 pattern,
// a narrow gaussian, a wide one, a constant, and a partial block of
// subnormals, so that AUTO's C per block spans its range.
func blocksOfScales() []uint16 {
	var src []uint16
	src = append(src, allPatterns(true)...)
	src = append(src, gaussianBF16(65536, 31, 1e-3)...)
	src = append(src, testbf16.Gaussian(rand.New(rand.NewPCG(32, 1)), 65536, 1e30)...)
	src = append(src, slices.Repeat([]uint16{0x3F80}, 65536)...)
	r := rand.New(rand.NewPCG(33, 1))
	for range 12345 {
		src = append(src, uint16(r.IntN(128))|uint16(r.IntN(2))<<15)
	}
	return src
}

// TestBlockCapacitiesRoundTrip: AUTO gives the blocks of blocksOfScales
// different capacities, and under every distribution the bytes equal the
// reference transcription, decode back, serialise and parse back.
func TestBlockCapacitiesRoundTrip(t *testing.T) {
	src := blocksOfScales()
	for _, d := range Distributions {
		enc := checkRoundTrip(t, "blocks of different scales", src, Options{Preset: Auto, Dist: d, Version: FormatVersion2})
		if !enc.Layout.PerBlock || len(enc.BlockBytes) != 5 {
			t.Fatalf("%v: per block %v, capacities %v", d, enc.Layout.PerBlock, enc.BlockBytes)
		}
		if slices.Min(enc.BlockBytes) == slices.Max(enc.BlockBytes) {
			t.Fatalf("%v: every block got C = %d", d, enc.BlockBytes[0])
		}
		if want := BlockCapacities(&enc.Codebook, enc.Layout, src); !slices.Equal(enc.BlockBytes, want) {
			t.Fatalf("%v: capacities %v, AUTO's rule gives %v", d, enc.BlockBytes, want)
		}
	}
}

// TestOneCapacityWhenBlocksAgree: a tensor whose blocks all get the same C,
// and a tensor of one block, keep one C and no table.
func TestOneCapacityWhenBlocksAgree(t *testing.T) {
	for name, src := range map[string][]uint16{
		"one exponent, three blocks": slices.Repeat([]uint16{0x3F80, 0xBF80}, 3*65536/2),
		"one block":                  gaussianBF16(65536, 3, 1),
		"N < 256":                    gaussianBF16(200, 4, 1),
	} {
		enc, err := Encode(src, Options{Preset: Auto, Dist: Empirical})
		if err != nil {
			t.Fatal(err)
		}
		if enc.Layout.PerBlock || enc.BlockBytes != nil {
			t.Errorf("%s: capacities per block %v", name, enc.BlockBytes)
		}
	}
}

// TestEncodeBlocksAnyCapacities: capacities given by hand, each block its
// own from 2 to 512 (most blocks spill, some waste room), give the
// reference's bytes and decode back, for full and partial last blocks.
func TestEncodeBlocksAnyCapacities(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{65537, 2*65536 + 255, 3 * 65536, 4*65536 + 4097} {
		src := gaussianBF16(n, uint64(n), 1)
		copy(src[65536:], randomBF16(20000, uint64(n)))
		h := SampleHistogram(src)
		cb := FitCodebook(Empirical, &h)
		l := Layout{Preset: Auto, BlockSize: 65536, PerBlock: true, Version: FormatVersion2}
		caps := make([]uint16, l.Blocks(n))
		for b := range caps {
			caps[b] = uint16(2 + r.IntN(511))
		}
		caps[len(caps)-1] = 512
		l.StreamBytes = 512
		var e Encoder
		var enc Tensor
		if err := e.EncodeBlocks(&enc, src, cb, l, caps); err != nil {
			t.Fatal(err)
		}
		if err := sameTensor(&enc, referenceEncodeBlocks(src, cb, l, caps)); err != nil {
			t.Fatalf("n=%d caps %v: %v", n, caps, err)
		}
		got, err := DecodeAlloc(&enc)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if i := testbf16.FirstDiff(got, src); i >= 0 {
			t.Fatalf("n=%d: value %d is %#04x, want %#04x", n, i, got[i], src[i])
		}
		bin, _ := enc.MarshalBinary()
		parsed, err := ParseTensor(bin)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if err := sameTensor(&enc, parsed); err != nil {
			t.Fatalf("n=%d: parsed: %v", n, err)
		}
	}
}

// TestEncodeBlocksRejects: tables that do not fit the layout are refused
// with an error that names the problem.
func TestEncodeBlocksRejects(t *testing.T) {
	src := gaussianBF16(3*65536, 5, 1)
	h := SampleHistogram(src)
	cb := FitCodebook(Empirical, &h)
	auto := Layout{Preset: Auto, BlockSize: 65536, StreamBytes: 100, PerBlock: true, Version: FormatVersion2}
	cases := []struct {
		name string
		l    Layout
		caps []uint16
		want string
	}{
		{"too few", auto, []uint16{100, 100}, "2 capacities per block, want 3"},
		{"too small", auto, []uint16{100, 1, 100}, "block 1: stream capacity 1 bytes out of range 2..512"},
		{"too large", Layout{Preset: Auto, BlockSize: 65536, StreamBytes: 513, PerBlock: true, Version: FormatVersion2}, []uint16{100, 513, 100}, "auto stream capacity 513 bytes out of range"},
		{"largest is not C", auto, []uint16{100, 90, 99}, "largest capacity per block is 100 bytes, the header's C is 100"},
		{"table without PerBlock", Layout{Preset: Auto, BlockSize: 65536, StreamBytes: 100, Version: FormatVersion2}, []uint16{100, 100, 100}, "3 capacities per block for a layout of one capacity"},
		{"CLEAN per block", Layout{Preset: Clean, BlockSize: 65536, StreamBytes: 100, PerBlock: true, Version: FormatVersion2}, []uint16{100, 100, 100}, "clean with capacities per block"},
		{"version 1 per block", Layout{Preset: Auto, BlockSize: 65536, StreamBytes: 100, PerBlock: true, Version: FormatVersion1}, []uint16{100, 100, 100}, "capacities per block in format version 1"},
	}
	cases[3].caps = []uint16{90, 90, 99} // largest 99 under C = 100
	cases[3].want = "largest capacity per block is 99 bytes, the header's C is 100"
	var e Encoder
	for _, c := range cases {
		cbv := cb
		if c.l.v1() {
			cbv = FitCodebookVersion(Empirical, &h, FormatVersion1)
		}
		var enc Tensor
		err := e.EncodeBlocks(&enc, src, cbv, c.l, c.caps)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestParseCapacityCorruption: any change to a block's C either is reported
// (the stream area's length, the largest C, the range) or, where it leaves
// the block's C_b and the largest C as they were (the partial last block),
// decodes to the same values.
func TestParseCapacityCorruption(t *testing.T) {
	enc, bin, src := corruptionSubject(t, Empirical)
	sec := sections(enc)
	for i := sec["capacities"][0]; i < sec["capacities"][1]; i++ {
		for bit := range 8 {
			b := bytes.Clone(bin)
			b[i] ^= 1 << bit
			blk := (i - sec["capacities"][0]) / capacityBytes
			changed := *enc
			changed.BlockBytes = slices.Clone(enc.BlockBytes)
			changed.BlockBytes[blk] = binary.LittleEndian.Uint16(b[sec["capacities"][0]+capacityBytes*blk:])
			same := changed.BlockBytes[blk] >= autoMinStreamBytes && changed.BlockBytes[blk] <= autoMaxStreamBytes &&
				maxCapacity(changed.BlockBytes) == enc.Layout.StreamBytes && changed.BlockStreamBytes(blk) == enc.BlockStreamBytes(blk)
			got, err := ParseTensor(b)
			if err == nil {
				var vals []uint16
				vals, err = DecodeAlloc(got)
				if err == nil && !same {
					t.Errorf("byte %d bit %d (C of block %d): parsed and decoded", i, bit, blk)
				}
				if err == nil && testbf16.FirstDiff(vals, src) >= 0 {
					t.Errorf("byte %d bit %d (C of block %d): decoded to other values", i, bit, blk)
				}
			}
			if err != nil && same {
				t.Errorf("byte %d bit %d (C of block %d): C_b unchanged but %v", i, bit, blk, err)
			}
		}
	}
	// The flag without a table that fits.
	short := bytes.Clone(bin[:enc.HeaderBytes()+1])
	if _, err := ParseTensor(short); err == nil || !bytes.Contains([]byte(err.Error()), []byte("capacities per block")) {
		t.Errorf("truncated table: %v", err)
	}
	noFlag := bytes.Clone(bin)
	noFlag[29] &^= flagPerBlock
	if _, err := ParseTensor(noFlag); err == nil {
		t.Error("table without the flag parsed")
	}
	badFlag := bytes.Clone(bin)
	badFlag[29] = 0x0f
	if _, err := ParseTensor(badFlag); err == nil || !bytes.Contains([]byte(err.Error()), []byte("flags (byte 29) 0xf")) {
		t.Errorf("flags 0xf: %v", err)
	}
}

// TestBlockCapacitiesAreLeastBytes: each block's capacity is the C in
// 2..512 under which the block, encoded alone, stores the fewest bytes
// (ties: the smaller), found here by encoding it under every C.
func TestBlockCapacitiesAreLeastBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	src := gaussianBF16(65536, 73, 1)
	src = append(src, randomBF16(65536, 74)...)           // escapes everywhere: spilling is cheapest
	src = append(src, gaussianBF16(65536, 75, 1e-12)...)  // another scale under the same codebook
	src = append(src, testbf16.Gaussian(r, 5000, 0.3)...) // a partial last block
	h := SampleHistogram(src[:65536])
	for _, d := range []Distribution{Empirical, Gaussian} {
		cb := FitCodebook(d, &h)
		l := Layout{Preset: Auto, BlockSize: 65536, Version: FormatVersion2}
		caps := BlockCapacities(&cb, l, src)
		var e Encoder
		var enc Tensor
		for b := range caps {
			block := src[b*65536 : min((b+1)*65536, len(src))]
			best, least := 0, 0
			for c := autoMinStreamBytes; c <= autoMaxStreamBytes; c++ {
				l.StreamBytes = c
				if err := e.Encode(&enc, block, cb, l); err != nil {
					t.Fatal(err)
				}
				if s := enc.StoredBytes(); best == 0 || s < least {
					best, least = c, s
				}
			}
			if int(caps[b]) != best {
				t.Errorf("%s block %d: capacity %d, the least bytes are at C = %d", d, b, caps[b], best)
			}
		}
	}
}
