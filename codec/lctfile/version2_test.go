package lctfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"lcttop/codec"
	"lcttop/codec/safetensors"
)

// version2Dir holds .lct files written by format version 2 before the
// tensor header named a family shape (every tensor has shape 0 there).
const version2Dir = "testdata/v2"

// TestVersion2Files: version 2 files written before the shape field still
// unpack byte for byte, every tensor reads back with shape 0, and the codec
// still writes exactly their tensors' bytes from the codebook and layout
// they carry.
func TestVersion2Files(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(version1Dir, "slices.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(version2Dir, "*.v2.lct"))
	if len(files) != 5 {
		t.Fatalf("%d version 2 files, want 5", len(files))
	}
	dists := map[codec.Distribution]bool{}
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
		if again, err := a.MarshalBinary(); err != nil || !bytes.Equal(again, lct) {
			t.Fatalf("%s: re-serialised archive differs (%v)", name, err)
		}
		for i := range a.Segments {
			s := &a.Segments[i]
			if s.Encoding != EncodingLCT {
				continue
			}
			tt := s.Tensor
			if tt.Codebook.Shape != 0 {
				t.Fatalf("%s: %s has shape %d, want 0", name, s.Name, tt.Codebook.Shape)
			}
			dists[tt.Codebook.Dist] = true
			vals := safetensors.BF16Values(got[8+len(a.Header)+int(s.Offset):][:s.OriginalLen])
			var re codec.Tensor
			if err := (&codec.Encoder{}).Encode(&re, vals, tt.Codebook, tt.Layout); err != nil {
				t.Fatal(err)
			}
			if b, err := re.MarshalBinary(); err != nil || !bytes.Equal(b, s.Payload) {
				t.Fatalf("%s: %s: re-encode differs from the file's bytes (%v)", name, s.Name, err)
			}
		}
	}
	if len(dists) != 4 {
		t.Fatalf("the version 2 files cover distributions %v, want all four", dists)
	}
}
