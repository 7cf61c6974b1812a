package filesource

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
	"lcttop/session"
)

// The teaching view's block is the block pack stores: under AUTO each
// block has the capacity its own values give, and its own codebook where
// that pays, so coding a block's detail alone gives, byte for byte, that
// block's stream heads in the packed tensor; the codebook is said to be
// the whole tensor's unless the block has its own.
func TestDetailIsThePackedBlock(t *testing.T) {
	// Blocks of different scales and spreads get different capacities.
	var vals []uint16
	vals = append(vals, gaussian(1, 65536, 0.02)...)
	vals = append(vals, adamV(2, 65536)...)
	vals = append(vals, gaussian(3, 65536, 3)...)
	vals = append(vals, adamV(4, 20_000)...)
	file := encode(t, []safetensors.NewTensor{bf16Tensor("mixed", vals)}, nil)
	path := filepath.Join(t.TempDir(), "mixed.safetensors")
	writeFile(t, path, file)
	cc := session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	s, err := Open(path, Options{Codec: &cc, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	waitFor(t, s, "exact figures", exact)
	want := packed(t, file, lctfile.Options{Preset: cc.Preset, Dist: cc.Dist})["mixed"]
	if want == nil || !want.Layout.PerBlock {
		t.Fatalf("pack gives the test tensor one capacity for every block: %+v", want)
	}
	blocks := want.Layout.Blocks(want.N)
	for b := range blocks {
		d, err := s.Detail("mixed", b)
		if err != nil {
			t.Fatal(err)
		}
		cb, own := want.Codebook, len(want.BlockCodebooks) > 0 && want.BlockCodebooks[b].EscLen != 0
		if own {
			cb = want.BlockCodebooks[b]
		}
		if d.TensorFit == own || d.Blocks != blocks || d.Codebook != cb {
			t.Fatalf("block %d: fitted to the tensor %v (the block has its own: %v), %d blocks, codebook as packed %v", b, d.TensorFit, own, d.Blocks, d.Codebook == cb)
		}
		lo := b * want.Layout.BlockSize
		if !slices.Equal(d.Values, vals[lo:min(lo+want.Layout.BlockSize, len(vals))]) {
			t.Fatalf("block %d: values differ from the file's", b)
		}
		var enc codec.Encoder
		var one codec.Tensor
		if err := enc.Encode(&one, d.Values, d.Codebook, d.Layout); err != nil {
			t.Fatal(err)
		}
		if got, w := one.BlockStreamBytes(0), want.BlockStreamBytes(b); got != w {
			t.Errorf("block %d: %d bytes a stream, pack stores %d", b, got, w)
		}
		if !bytes.Equal(one.Streams, want.Streams[want.StreamAreaStart(b):want.StreamAreaStart(b+1)]) {
			t.Errorf("block %d: streams differ from the packed block's", b)
		}
	}
}
