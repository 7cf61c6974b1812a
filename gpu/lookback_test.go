//go:build cuda || kernelemu

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
// that the blocks' overflow sizes, and with them every offset, differ.
func spillPattern(r *rand.Rand, name string, n int, small bool) batchCase {
	const B = 32768
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
		switch b % 4 {
		case 0: // block 0 spills too: its size is in every offset
			if k%256 == (b*37)%256 {
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
	return batchCase{name: name, src: src, cb: cb, l: codec.Layout{Preset: codec.High, BlockSize: B, StreamBytes: 48}, small: small}
}

// lookBackCases is a batch whose blocks' overflow offsets are sums over
// dozens of blocks of differing sizes: a tensor of 34 blocks, the last
// partial, a tensor whose spill does not fit, a one-block one; and tensors
// of more blocks (on a GPU, a wave of blocks looking back at once).
func lookBackCases(r *rand.Rand, more ...int) []batchCase {
	cases := []batchCase{
		spillPattern(r, "34 blocks, the last partial", 33*32768+5001, false),
		spillPattern(r, "2 blocks, does not fit", 2*32768, true),
		spillPattern(r, "one partial block", 3001, false),
	}
	for _, nb := range more {
		cases = append(cases, spillPattern(r, fmt.Sprintf("%d blocks", nb), nb*32768, false))
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
