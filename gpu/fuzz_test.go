package gpu

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"unsafe"

	"lcttop/codec"
	"lcttop/internal/testbf16"
)

// fuzzMaxValues bounds a fuzzed tensor: three full blocks and a partial one.
const fuzzMaxValues = 3*65536 + 77

// FuzzEncode: any values, tiled up to a few blocks, under any preset and
// distribution, or a capacity so small that most streams spill: the
// device's bytes are codec's, and they decode back to the values
// (checkEncode).
func FuzzEncode(f *testing.F) {
	f.Add([]byte{0x80, 0x3f, 0x00, 0x00, 0xff, 0x7f, 0x01, 0x00}, uint8(0), uint8(0), uint8(0), uint8(1))
	f.Add([]byte{0x12, 0x3c, 0x34, 0xbc, 0x56, 0x3b}, uint8(1), uint8(2), uint8(200), uint8(0))
	f.Add([]byte{0x00, 0x80, 0xff, 0xff, 0x80, 0x7f, 0x7f, 0x00, 0x01, 0x01}, uint8(3), uint8(3), uint8(255), uint8(4))
	f.Fuzz(func(t *testing.T, raw []byte, preset, dist, reps, spill uint8) {
		if len(raw) < 2 {
			return
		}
		unit := make([]uint16, len(raw)/2)
		for i := range unit {
			unit[i] = binary.LittleEndian.Uint16(raw[2*i:])
		}
		n := min(len(unit)*(1+int(reps)), fuzzMaxValues)
		src := make([]uint16, n)
		for i := range src {
			src[i] = unit[i%len(unit)]
		}
		cb, l := fitBlocks(src, codec.Presets[int(preset)%len(codec.Presets)], codec.Distributions[int(dist)%len(codec.Distributions)])
		if spill%4 == 0 {
			l = codec.Layout{Preset: codec.Auto, BlockSize: 65536, StreamBytes: 2 + int(spill)%7, Version: codec.FormatVersion2}
		}
		checkEncode(t, testCodec(t), "fuzzed tensor", src, cb, l)
	})
}

// FuzzDecodeCorrupt: a tensor's stream bytes, spill bitmaps, overflow
// offsets, overflow bytes or capacities per block changed at fuzzed places
// (the tensors with room: AUTO's capacity per block, the blocks differing
// in scale): the device decodes it
// exactly as codec does, or both refuse it, the device with a DecodeError,
// never a crash. On the H200, to the depth docs/perf.md states:
//
//	go test -run '^$' -fuzz '^FuzzDecodeCorrupt$' -fuzztime 1000000x ./gpu/
func FuzzDecodeCorrupt(f *testing.F) {
	f.Add(uint8(0), false, []byte{0, 10, 0, 0x40})
	f.Add(uint8(1), true, []byte{1, 3, 0, 0xff, 2, 200, 9, 0x01})
	f.Add(uint8(2), true, []byte{2, 0, 0, 0x80, 0, 77, 1, 0x10, 1, 9, 2, 0x0f})
	f.Add(uint8(3), true, []byte{3, 1, 0, 0x01, 2, 40, 0, 0x20})
	f.Add(uint8(3), false, []byte{4, 0, 0, 0x01, 0, 9, 1, 0x04})
	r := rand.New(rand.NewPCG(30, 31))
	src := append(testbf16.Gaussian(r, 65536, 0.02), testbf16.Gaussian(r, 1000, 20)...)
	// The tensors the edits start from, encoded once per process.
	var clean [8]*codec.Tensor
	f.Fuzz(func(t *testing.T, dist uint8, small bool, edits []byte) {
		k := int(dist) % len(codec.Distributions) * 2
		if small {
			k++
		}
		if clean[k] == nil {
			cb, l := fitBlocks(src, codec.Auto, codec.Distributions[k/2])
			if small {
				l.PerBlock, l.StreamBytes = false, 40 // most streams spill
			}
			clean[k] = cpuEncode(t, src, cb, l)
			if !small && !clean[k].Layout.PerBlock {
				t.Fatalf("%s: the tensor to corrupt has one C", codec.Distributions[k/2])
			}
		}
		c := clean[k]
		ct := *c
		ct.Streams = append([]byte(nil), c.Streams...)
		ct.Bitmaps = append([]byte(nil), c.Bitmaps...)
		ct.Offsets = append([]uint32(nil), c.Offsets...)
		ct.Overflow = append([]byte(nil), c.Overflow...)
		ct.BlockBytes = append([]uint16(nil), c.BlockBytes...)
		offsets := u32Bytes(ct.Offsets)
		var caps []byte
		if len(ct.BlockBytes) > 0 {
			caps = unsafe.Slice((*byte)(unsafe.Pointer(&ct.BlockBytes[0])), 2*len(ct.BlockBytes))
		}
		// Each edit is four bytes: which section, where (16 bits, scaled
		// to its length), and the bits to flip.
		for i := 0; i+4 <= len(edits); i += 4 {
			sec := [][]byte{ct.Streams, ct.Bitmaps, ct.Overflow, offsets, caps}[int(edits[i])%5]
			if len(sec) > 0 && edits[i+3] != 0 {
				at := int(binary.LittleEndian.Uint16(edits[i+1:]))
				sec[at*len(sec)/65536] ^= edits[i+3]
			}
		}
		want := make([]uint16, len(src))
		werr := codec.Decode(&ct, want)
		got := make([]uint16, len(src))
		gerr := testCodec(t).Decode(&ct, got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("codec decode error %v, gpu decode error %v", werr, gerr)
		}
		if werr != nil {
			// The host refuses a broken structure before the device decodes.
			var de *DecodeError
			if ct.CheckStructure() == nil && !errors.As(gerr, &de) {
				t.Fatalf("gpu error %v is not a DecodeError (codec: %v)", gerr, werr)
			}
			return
		}
		if i := testbf16.FirstDiff(want, got); i >= 0 {
			t.Fatalf("decodable tensor: value %d: codec %#04x, gpu %#04x", i, want[i], got[i])
		}
	})
}
