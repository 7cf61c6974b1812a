package gpu

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testbf16"
)

// scaledBlocks is a tensor whose blocks differ wildly in scale (so that
// AUTO gives each its own C), its last block partial.
func scaledBlocks(r *rand.Rand, blocks, tail int) []uint16 {
	var src []uint16
	sigmas := []float64{1e-3, 1, 1e30, 1e-30}
	for b := range blocks {
		src = append(src, testbf16.Gaussian(r, 65536, sigmas[b%len(sigmas)])...)
	}
	return append(src, testbf16.Gaussian(r, tail, 0.5)...)
}

// TestEncodeCapacitiesPerBlock: AUTO's capacities per block, chosen on the
// host, give the device's bytes and Stats equal to codec's, and the device
// decodes codec's tensor, under every distribution; so do capacities set by
// hand (the smallest, the largest, and between), one block spilling in
// every stream beside one with room to spare.
func TestEncodeCapacitiesPerBlock(t *testing.T) {
	c := testCodec(t)
	r := rand.New(rand.NewPCG(51, 52))
	src := scaledBlocks(r, 3, 4097)
	if !emulated(t) {
		src = scaledBlocks(r, 9, 4097)
	}
	src = append(allPatterns(53), src...)
	for _, d := range codec.Distributions {
		cb, l := fitBlocks(src, codec.Auto, d)
		if !l.PerBlock {
			t.Fatalf("%s: one C (%d) for blocks of different scales", d, l.StreamBytes)
		}
		want := checkEncode(t, c, "blocks of different scales "+d.String(), src, cb, l)
		if slices.Min(want.BlockBytes) == slices.Max(want.BlockBytes) {
			t.Fatalf("%s: every block got C = %d", d, want.BlockBytes[0])
		}
	}
	cb, _ := fitBlocks(src, codec.Auto, codec.Empirical)
	l := codec.Layout{Preset: codec.Auto, BlockSize: 65536, StreamBytes: 512, PerBlock: true, Version: codec.FormatVersion2}
	caps := make([]uint16, l.Blocks(len(src)))
	for b := range caps {
		caps[b] = uint16(2 + r.IntN(511))
	}
	caps[0], caps[1] = 2, 512
	var e codec.Encoder
	want := new(codec.Tensor)
	if err := e.EncodeBlocks(want, src, cb, l, caps); err != nil {
		t.Fatal(err)
	}
	got := new(codec.Tensor)
	if err := c.encodeBlocks(got, src, cb, l, caps); err != nil {
		t.Fatalf("capacities %v: gpu encode: %v", caps, err)
	}
	if err := sameTensor(want, got); err != nil {
		t.Fatalf("capacities %v: gpu encode differs from codec: %v", caps, err)
	}
	back := make([]uint16, len(src))
	if err := c.Decode(want, back); err != nil {
		t.Fatalf("capacities %v: gpu decode: %v", caps, err)
	}
	if i := testbf16.FirstDiff(src, back); i >= 0 {
		t.Fatalf("capacities %v: gpu decode differs at %d", caps, i)
	}
}

// TestCapacitiesPerBlockRefused: a device tensor made directly (the
// batched coders' and the trainer's) has one C; asking for capacities per
// block without their table is one clear error, and so is a table that
// does not fit.
func TestCapacitiesPerBlockRefused(t *testing.T) {
	d := device(t)
	src := scaledBlocks(rand.New(rand.NewPCG(61, 62)), 2, 0)
	cb, l := fitBlocks(src, codec.Auto, codec.Empirical)
	if !l.PerBlock {
		t.Fatal("subject has one C")
	}
	if _, err := d.NewTensor(len(src), l, cb, 0, Weights); err == nil || !strings.Contains(err.Error(), "capacities per block") {
		t.Fatalf("NewTensor with capacities per block: %v", err)
	}
	c := testCodec(t)
	for _, caps := range [][]uint16{{100}, {100, 1}, {90, 90}} {
		l.StreamBytes = 100
		err := c.encodeBlocks(new(codec.Tensor), src, cb, l, caps)
		if err == nil || !strings.Contains(err.Error(), "capacit") {
			t.Errorf("capacities %v: %v", caps, err)
		}
	}
}
