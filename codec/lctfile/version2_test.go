package lctfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"lcttop/codec"
	"lcttop/codec/safetensors"
)

// version2OneCDir holds .lct files of format version 2 written before AUTO
// chose a capacity per block (one C per tensor), from testdata/v1's
// slices.safetensors.
const version2OneCDir = "testdata/v2"

// TestVersion2OneCapacityFiles: version 2 files whose AUTO tensors carry one
// C and 128-byte codebooks still unpack byte for byte, parse without
// capacities per block, and encode to exactly their bytes under the layout
// they carry; packed today, AUTO gives the two-block tensor a capacity per
// block and is smaller.
func TestVersion2OneCapacityFiles(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(version1Dir, "slices.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(version2OneCDir, "*.v2.lct"))
	if len(files) != 4 {
		t.Fatalf("%d version 2 files, want 4 (one per preset)", len(files))
	}
	for _, path := range files {
		lct, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		got, err := Unpack(lct, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: unpacked file differs from the original", name)
		}
		a, err := ReadArchive(lct)
		if err != nil {
			t.Fatal(err)
		}
		if a.Version != codec.FormatVersion2 {
			t.Fatalf("%s: version %d", name, a.Version)
		}
		var preset codec.Preset
		var dist codec.Distribution
		for i := range a.Segments {
			s := &a.Segments[i]
			if s.Encoding != EncodingLCT {
				continue
			}
			tt := s.Tensor
			if tt.Layout.Version1 || tt.Layout.PerBlock || tt.CompactCodebook {
				t.Fatalf("%s: %s parsed as version %d, per block %v, compact codebook %v", name, s.Name, tt.Layout.FormatVersion(), tt.Layout.PerBlock, tt.CompactCodebook)
			}
			preset, dist = tt.Layout.Preset, tt.Codebook.Dist
			vals := safetensors.BF16Values(got[8+len(a.Header)+int(s.Offset):][:s.OriginalLen])
			var re codec.Tensor
			if err := (&codec.Encoder{}).Encode(&re, vals, tt.Codebook, tt.Layout); err != nil {
				t.Fatal(err)
			}
			re.CompactCodebook = false // stored with 128 bytes, as before the compact form
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
		if preset != codec.Auto {
			if !bytes.Equal(now, lct) {
				t.Fatalf("%s packed again: %s's bytes changed", name, preset)
			}
			continue
		}
		a2, err := ReadArchive(now)
		if err != nil {
			t.Fatal(err)
		}
		perBlock := 0
		for i := range a2.Segments {
			if tt := a2.Segments[i].Tensor; tt != nil && tt.Layout.PerBlock {
				perBlock++
			}
		}
		if perBlock != 1 || len(now) >= len(lct) {
			t.Fatalf("%s packed again: %d tensors with capacities per block, %d bytes (was %d)", name, perBlock, len(now), len(lct))
		}
	}
}
