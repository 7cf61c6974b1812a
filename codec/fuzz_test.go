package codec

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"lcttop/internal/testbf16"
)

// FuzzRoundTrip: any values (two bytes each, little-endian) encode under
// every preset, distribution and format version to the reference bytes and
// decode back.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x3F})
	f.Add(bytes.Repeat([]byte{0xFF, 0x7F}, 300))
	f.Add(binary.LittleEndian.AppendUint16(nil, 0x0001))
	seed := make([]byte, 0, 2*1000)
	for _, v := range gaussianBF16(1000, 1, 0.1) {
		seed = binary.LittleEndian.AppendUint16(seed, v)
	}
	f.Add(seed)
	var e Encoder
	var d Decoder
	var enc Tensor
	f.Fuzz(func(t *testing.T, data []byte) {
		src := make([]uint16, len(data)/2)
		for i := range src {
			src[i] = binary.LittleEndian.Uint16(data[2*i:])
		}
		h := SampleHistogram(src)
		out := make([]uint16, len(src))
		for _, dist := range Distributions {
			for _, v1 := range []bool{false, true} {
				cb := FitCodebook(dist, &h)
				if v1 {
					cb = FitCodebookVersion(dist, &h, FormatVersion1)
				}
				for _, p := range Presets {
					l := ChooseLayout(p, &cb, &h).WithVersion(FormatVersion2)
					if v1 {
						l.Version = FormatVersion1
					}
					l = ChooseBlockLayout(l, &cb, src)
					if err := e.Encode(&enc, src, cb, l); err != nil {
						t.Fatalf("%v/%v v%d: %v", p, dist, l.FormatVersion(), err)
					}
					if err := sameTensor(&enc, referenceEncode(src, cb, l)); err != nil {
						t.Fatalf("%v/%v v%d: %v", p, dist, l.FormatVersion(), err)
					}
					if err := d.Decode(&enc, out); err != nil {
						t.Fatalf("%v/%v v%d: %v", p, dist, l.FormatVersion(), err)
					}
					if i := testbf16.FirstDiff(out, src); i >= 0 {
						t.Fatalf("%v/%v v%d: value %d is %#04x, want %#04x", p, dist, l.FormatVersion(), i, out[i], src[i])
					}
				}
			}
		}
	})
}

// twoScales is a full block and a partial one of another scale, which AUTO
// stores with a capacity per block.
func twoScales() []uint16 {
	return append(gaussianBF16(65536, 3, 1), gaussianBF16(700, 4, 1e-20)...)
}

// FuzzParseTensor: arbitrary bytes never panic; whatever parses and decodes
// serialises back to the same bytes.
func FuzzParseTensor(f *testing.F) {
	for _, src := range [][]uint16{nil, {0x3F80}, gaussianBF16(600, 1, 1), randomBF16(300, 2), twoScales()} {
		for _, p := range Presets {
			enc, err := Encode(src, Options{Preset: p, Dist: Distribution(p)})
			if err != nil {
				f.Fatal(err)
			}
			b, _ := enc.MarshalBinary()
			f.Add(b)
			if enc.DerivedCodebook {
				enc.DerivedCodebook = false // its 128 bytes of lengths, as written before
				b, _ = enc.MarshalBinary()
				f.Add(b)
			}
			for _, v := range []int{FormatVersion1, FormatVersion2} {
				old, err := Encode(src, Options{Preset: p, Dist: Distribution(p), Version: v})
				if err != nil {
					f.Fatal(err)
				}
				b, _ = old.MarshalBinary()
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tt, err := ParseTensor(b)
		// Read by pieces (streaming unpack), the bytes are accepted and
		// refused alike and decode to the same values.
		pieces, perr := readByPieces(b)
		if err != nil {
			if perr == nil {
				t.Fatalf("pieces accepted what ParseTensor refused: %v", err)
			}
			return
		}
		if tt.N > 1<<20 {
			return // a valid header with a huge N cannot come with that much data here
		}
		vals, derr := DecodeAlloc(tt)
		if (derr == nil) != (perr == nil) {
			t.Fatalf("decode says %v, pieces %v", derr, perr)
		}
		if derr == nil && !slices.Equal(vals, pieces) {
			t.Fatal("pieces decode to other values than the whole")
		}
		if tt.N > 1<<20 {
			return // a valid header with a huge N cannot come with that much data here
		}
		if derr != nil {
			return
		}
		again, err := tt.MarshalBinary()
		if err != nil {
			t.Fatalf("parsed and decoded but does not marshal: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("Marshal(Parse(b)) differs from b at byte %d", testbf16.FirstDiff(again, b))
		}
		if err := tt.ComputeStats(); err != nil {
			t.Fatalf("decoded but ComputeStats fails: %v", err)
		}
	})
}

// TestFuzzSeedsHaveCapacitiesPerBlock: FuzzParseTensor starts from a tensor
// with a capacity per block (FuzzRoundTrip's inputs stay small, so that it
// runs many; TestBlockCapacitiesRoundTrip covers those round trips).
func TestFuzzSeedsHaveCapacitiesPerBlock(t *testing.T) {
	enc, err := Encode(twoScales(), Options{Preset: Auto, Dist: Empirical})
	if err != nil {
		t.Fatal(err)
	}
	if !enc.Layout.PerBlock || len(enc.BlockBytes) != 2 || enc.BlockBytes[0] == enc.BlockBytes[1] {
		t.Fatalf("per block %v, capacities %v", enc.Layout.PerBlock, enc.BlockBytes)
	}
}
