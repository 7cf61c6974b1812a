package lctfile

import (
	"bytes"
	"path/filepath"
	"testing"

	"lcttop/codec"
	"lcttop/codec/safetensors"
)

// version2Dir holds .lct files of format version 2 written before the
// header's bytes 28–31 held anything (shape 0, no flags, 128-byte
// codebooks, one C per tensor), from testdata/v1's slices.safetensors.
const version2Dir = "testdata/v2"

// TestVersion2Files: version 2 files written before shapes, capacities per
// block and compact or derived codebooks still unpack byte for byte, parse
// with shape 0 and none of the flags, and the codec still writes exactly
// their tensors' bytes from the codebook and layout they carry, stored as
// they are; packed today, parametric codebooks cost no lengths and AUTO
// gives the two-block tensor a capacity per block and is smaller.
func TestVersion2Files(t *testing.T) {
	want, files := committedFiles(t, version2Dir, "*.v2.lct", 5)
	dists := map[codec.Distribution]bool{}
	for _, path := range files {
		name := filepath.Base(path)
		lct, a, got := readCommitted(t, path, want, codec.FormatVersion2)
		var preset codec.Preset
		var dist codec.Distribution
		for i := range a.Segments {
			s := &a.Segments[i]
			if s.Encoding != EncodingLCT {
				continue
			}
			tt := s.Tensor
			if (tt.Layout.FormatVersion() == codec.FormatVersion1) || tt.Layout.PerBlock || tt.CompactCodebook || tt.DerivedCodebook || tt.Codebook.Shape != 0 {
				t.Fatalf("%s: %s parsed as version %d, per block %v, compact codebook %v, derived codebook %v, shape %d",
					name, s.Name, tt.Layout.FormatVersion(), tt.Layout.PerBlock, tt.CompactCodebook, tt.DerivedCodebook, tt.Codebook.Shape)
			}
			preset, dist = tt.Layout.Preset, tt.Codebook.Dist
			dists[dist] = true
			vals := safetensors.BF16Values(got[8+len(a.Header)+int(s.Offset):][:s.OriginalLen])
			var re codec.Tensor
			if err := (&codec.Encoder{}).Encode(&re, vals, tt.Codebook, tt.Layout); err != nil {
				t.Fatal(err)
			}
			// Stored with 128 bytes of lengths, as before the other forms.
			re.CompactCodebook, re.DerivedCodebook = false, false
			b, err := re.MarshalBinary()
			if err != nil || !bytes.Equal(b, s.Payload) {
				t.Fatalf("%s: %s: re-encode under its layout differs from the file's bytes (%v)", name, s.Name, err)
			}
		}
		st, err := safetensors.Parse(want)
		if err != nil {
			t.Fatal(err)
		}
		now, err := Pack(st, Options{Preset: preset, Dist: dist})
		if err != nil {
			t.Fatal(err)
		}
		if back, err := Unpack(now, nil); err != nil || !bytes.Equal(back, want) {
			t.Fatalf("%s packed again: unpack %v", name, err)
		}
		t.Logf("%s: %d bytes, packed today %d", name, len(lct), len(now))
		a2, err := ReadArchive(now)
		if err != nil {
			t.Fatal(err)
		}
		perBlock := 0
		for i := range a2.Segments {
			tt := a2.Segments[i].Tensor
			if tt == nil {
				continue
			}
			if tt.Layout.PerBlock {
				perBlock++
			}
			if parametric := dist != codec.Empirical; tt.DerivedCodebook != parametric || parametric && tt.HeaderBytes() != 32 {
				t.Fatalf("%s packed again: %s derived codebook %v, header %d bytes", name, a2.Segments[i].Name, tt.DerivedCodebook, tt.HeaderBytes())
			}
		}
		if preset != codec.Auto {
			continue // the shapes fitted today change the fixed presets' codes both ways
		}
		if perBlock != 1 || len(now) >= len(lct) {
			t.Fatalf("%s packed again: %d tensors with capacities per block, %d bytes (was %d)", name, perBlock, len(now), len(lct))
		}
	}
	if len(dists) != 4 {
		t.Fatalf("the version 2 files cover distributions %v, want all four", dists)
	}
}
