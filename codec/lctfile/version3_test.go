package lctfile

import (
	"bytes"
	"path/filepath"
	"testing"

	"lcttop/codec"
	"lcttop/codec/safetensors"
)

// version3Dir holds .lct files of format version 3 from testdata/v1's
// slices.safetensors.
const version3Dir = "testdata/v3"

// TestVersion3Files: the committed version 3 files unpack byte for byte
// (whole and by stream, readCommitted), between them hold a sign stored
// once, symbols with fraction bits, tails and capacities per block, and
// the codec still writes exactly their tensors' bytes from the codebook
// and layout they carry.
func TestVersion3Files(t *testing.T) {
	want, files := committedFiles(t, version3Dir, "*.v3.lct", 4)
	var signOnce, split, tails, perBlock bool
	for _, path := range files {
		name := filepath.Base(path)
		_, a, got := readCommitted(t, path, want, codec.FormatVersion3)
		for i := range a.Segments {
			s := &a.Segments[i]
			if s.Encoding != EncodingLCT {
				continue
			}
			tt := s.Tensor
			signOnce = signOnce || tt.Layout.Sign != codec.SignMixed
			split = split || tt.Codebook.Split > 0
			perBlock = perBlock || tt.Layout.PerBlock
			for _, u := range tt.TailUnits {
				tails = tails || u != 0
			}
			vals := safetensors.BF16Values(got[8+len(a.Header)+int(s.Offset):][:s.OriginalLen])
			var re codec.Tensor
			if err := (&codec.Encoder{}).Encode(&re, vals, tt.Codebook, tt.Layout); err != nil {
				t.Fatal(err)
			}
			re.DropEqualCapacities()
			b, err := re.MarshalBinary()
			if err != nil || !bytes.Equal(b, s.Payload) {
				t.Fatalf("%s: %s: re-encode under its codebook and layout differs from the file's bytes (%v)", name, s.Name, err)
			}
		}
	}
	if !signOnce || !split || !tails || !perBlock {
		t.Fatalf("the version 3 files hold: a sign stored once %v, split symbols %v, tails %v, capacities per block %v; want all", signOnce, split, tails, perBlock)
	}
}
