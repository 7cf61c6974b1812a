package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testbf16"
)

// spillPattern makes a HIGH tensor of n values whose blocks spill by a
// pattern, block by block: in one stream, not at all (every exponent the
// one of the shortest code), in a share of the values that varies with the
// block, or everywhere (random bit patterns under a Gaussian codebook), so
// that the blocks' overflow sizes, and with them every offset, differ; phase
// shifts the pattern by blocks.
func spillPattern(r *rand.Rand, name string, n, phase int, small bool) batchCase {
	const B = 32768
	l := codec.Layout{Preset: codec.High, BlockSize: B, StreamBytes: 48, Version: codec.FormatVersion2}
	cb, _ := fit(testbf16.Gaussian(r, 4096, 0.01), codec.High, codec.Gaussian)
	short := 0
	for e, l := range cb.Lengths {
		if l != 0 && (cb.Lengths[short] == 0 || l < cb.Lengths[short]) {
			short = e
		}
	}
	src := make([]uint16, n)
	for i := range src {
		b, k := i/B, i%B
		src[i] = uint16(short)<<7 | uint16(r.Uint32())&0x807F // sign and fraction vary
		switch (b + phase) % 4 {
		case 0: // with phase 0, block 0 spills too: its size is in every offset
			if l.Stream(k) == (b*37)%256 {
				src[i] = uint16(r.Uint32())
			}
		case 2:
			if r.IntN(64) <= b%13 {
				src[i] = uint16(r.Uint32())
			}
		case 3:
			src[i] = uint16(r.Uint32())
		}
	}
	return batchCase{name: name, src: src, cb: cb, l: l, small: small}
}

// lookBackCases is a batch whose blocks' overflow offsets are sums over
// dozens of blocks of differing sizes: a tensor of 34 blocks, the last
// partial, a tensor whose spill does not fit, a one-block one; and tensors
// of more blocks (on a GPU, a wave of blocks looking back at once).
func lookBackCases(r *rand.Rand, more ...int) []batchCase {
	cases := []batchCase{
		spillPattern(r, "34 blocks, the last partial", 33*32768+5001, 0, false),
		spillPattern(r, "2 blocks, does not fit", 2*32768, 0, true),
		spillPattern(r, "one partial block", 3001, 0, false),
	}
	for _, nb := range more {
		cases = append(cases, spillPattern(r, fmt.Sprintf("%d blocks", nb), nb*32768, 0, false))
	}
	return cases
}

// TestEncodeLookBack: the encoders place each block's overflow region by
// look-back (kernels/lct.cu); batched and single, the offsets, overflow and
// every other byte must be codec's for blocks that spill in a pattern, and a
// spill that does not fit must be reported as such. checkBatch encodes each
// batch twice: the second launch finds the first one's look-back words.
func TestEncodeLookBack(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(31, 32))
	var more []int
	if !emulated(t) {
		more = []int{40, 300, 1000}
	}
	cases := lookBackCases(r, more...)
	for i, c := range cases {
		want := cpuEncode(t, c.src, c.cb, c.l)
		spilling := 0
		for b := range c.l.Blocks(len(c.src)) {
			end := len(want.Overflow)
			if b+1 < len(want.Offsets) {
				end = int(want.Offsets[b+1])
			}
			if end > int(want.Offsets[b]) {
				spilling++
			}
		}
		// The pattern must do what it is for: blocks that spill and blocks
		// that do not, in one tensor.
		if nb := c.l.Blocks(len(c.src)); nb > 2 && (spilling == 0 || spilling == nb) {
			t.Fatalf("case %d (%s): %d of %d blocks spill", i, c.name, spilling, nb)
		}
	}
	checkBatch(t, d, cases)
	if !t.Failed() {
		t.Logf("%s", describeCases(cases))
	}
}

func describeCases(cases []batchCase) string {
	s := ""
	for _, c := range cases {
		s += fmt.Sprintf("%s: %d blocks; ", c.name, c.l.Blocks(len(c.src)))
	}
	return s
}

// TestEncodeLookBackAgain: tensors encoded twice, the second time with the
// spill pattern shifted by a block, so that every block's look-back word
// changes value between the launches. A block that took a word of the
// launch before for one of this launch (the epoch in the words is there to
// tell them apart) would place its region at the first launch's offset. On
// a GPU, blocks read their predecessors' words while these are being
// written; the emulation's blocks always find them written.
func TestEncodeLookBackAgain(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(35, 36))
	sizes := []int{34*32768 + 5001}
	if !emulated(t) {
		sizes = append(sizes, 300*32768, 1000*32768+77)
	}
	var ts []*Tensor
	srcs := make([][]Buffer, 2)
	wants := make([][]*codec.Tensor, 2)
	for _, n := range sizes {
		a := spillPattern(r, fmt.Sprintf("%d values", n), n, 0, false)
		b := spillPattern(r, a.name, n, 1, false)
		b.cb = a.cb
		var ov int
		for round, c := range []batchCase{a, b} {
			w := cpuEncode(t, c.src, a.cb, c.l)
			ov = max(ov, len(w.Overflow))
			src, err := d.Alloc(2*n, CodecScratch)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Free(src)
			if err := d.UploadBF16(src, c.src); err != nil {
				t.Fatal(err)
			}
			srcs[round], wants[round] = append(srcs[round], src), append(wants[round], w)
		}
		x, err := d.NewTensor(n, a.l, a.cb, ov, Weights)
		if err != nil {
			t.Fatal(err)
		}
		x.Name = a.name
		defer x.Free()
		ts = append(ts, x)
	}
	check := func(how string, round int) {
		t.Helper()
		if err := d.SyncStatus(); err != nil {
			t.Fatalf("%s, round %d: %v", how, round, err)
		}
		for i, x := range ts {
			got := new(codec.Tensor)
			if err := x.Download(got); err != nil {
				t.Fatal(err)
			}
			got.Stats = wants[round][i].Stats
			if err := sameTensor(wants[round][i], got); err != nil {
				t.Fatalf("%s, round %d: %s: differs from codec's: %v", how, round, x.label(), err)
			}
		}
	}
	for round := range 2 {
		if err := d.EncodeBatch(ts, srcs[round], Buffer{}, nil); err != nil {
			t.Fatal(err)
		}
		check("batched", round)
	}
	for round := range 2 {
		for i, x := range ts {
			if err := d.Encode(x, srcs[round][i]); err != nil {
				t.Fatal(err)
			}
		}
		check("single", round)
	}
}
