package lctfile

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"lcttop/codec"
	"lcttop/codec/safetensors"
	"lcttop/internal/testtensors"
)

// version1Dir holds .lct files written by format version 1 (plain round
// robin), before version 2 existed, and the safetensors file they hold.
const version1Dir = "testdata/v1"

// version1Slices is what testdata/v1/slices.safetensors holds: the first n
// values of real tensors, flattened, so that the fixtures are small but
// spill, escape and end in partial blocks and rows.
var version1Slices = []struct {
	file, tensor, name string
	n                  int
}{
	{"step600_adam_v.safetensors", "blocks.0.attn.weight", "adam_v.blocks.0.attn.weight", 70001},
	{"step600_grad.safetensors", "blocks.0.fc.weight", "grad.blocks.0.fc.weight", 9000},
	{"step600_act.safetensors", "act.h0.attn", "act.h0.attn", 5000},
	{"step600_weight.safetensors", "wte.weight", "weight.wte.weight", 3001},
	{"step600_adam_v.safetensors", "head.weight", "adam_v.head.weight", 300},
}

// buildVersion1Original rebuilds slices.safetensors from the real tensors.
func buildVersion1Original(t *testing.T) []byte {
	t.Helper()
	var out []safetensors.NewTensor
	for _, s := range version1Slices {
		f, err := safetensors.ReadFile(filepath.Join(testtensors.Dir(t), s.file))
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, ti := range f.Tensors {
			if ti.Name == s.tensor {
				out = append(out, safetensors.NewTensor{Name: s.name, DType: "BF16", Shape: []int64{int64(s.n)}, Data: f.Bytes(ti)[:2*s.n]})
				found = true
			}
		}
		if !found {
			t.Fatalf("%s: no tensor %s", s.file, s.tensor)
		}
	}
	b, err := safetensors.Encode(out, map[string]string{"source": "slices of the lcttop test tensors"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// committedFiles is the committed original (testdata/v1's
// slices.safetensors) and the n files of dir matching pattern, failing the
// test where there are not n.
func committedFiles(t *testing.T, dir, pattern string, n int) (original []byte, files []string) {
	t.Helper()
	original, err := os.ReadFile(filepath.Join(version1Dir, "slices.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ = filepath.Glob(filepath.Join(dir, pattern))
	if len(files) != n {
		t.Fatalf("%d files %s in %s, want %d", len(files), pattern, dir, n)
	}
	return original, files
}

// TestVersion1Files: files written before format version 2 still unpack
// byte for byte, read back as version 1 throughout, and the codec, asked
// for version 1's mapping, still writes exactly their tensors' bytes.
func TestVersion1Files(t *testing.T) {
	want, files := committedFiles(t, version1Dir, "*.v1.lct", 4)
	if !bytes.Equal(buildVersion1Original(t), want) {
		t.Fatal("slices.safetensors is not what the real tensors give")
	}
	presets := map[codec.Preset]bool{}
	for _, path := range files {
		name := filepath.Base(path)
		_, a, got := readCommitted(t, path, want, codec.FormatVersion1)
		lctSegments := 0
		for i := range a.Segments {
			s := &a.Segments[i]
			if s.Encoding != EncodingLCT {
				continue
			}
			lctSegments++
			tt := s.Tensor
			if tt.Layout.FormatVersion() != codec.FormatVersion1 {
				t.Fatalf("%s: %s parsed as version %d", name, s.Name, tt.Layout.FormatVersion())
			}
			presets[tt.Layout.Preset] = true
			vals := safetensors.BF16Values(got[8+len(a.Header)+int(s.Offset):][:s.OriginalLen])
			var re codec.Tensor
			if err := (&codec.Encoder{}).Encode(&re, vals, tt.Codebook, tt.Layout); err != nil {
				t.Fatal(err)
			}
			b, err := re.MarshalBinary()
			if err != nil || !bytes.Equal(b, s.Payload) {
				t.Fatalf("%s: %s: version 1 re-encode differs from the file's bytes (%v)", name, s.Name, err)
			}
		}
		if lctSegments != 4 {
			t.Fatalf("%s: %d LCT segments, want 4", name, lctSegments)
		}
		// Packed today, the same file is of the current version throughout and restores too.
		st, err := safetensors.Parse(want)
		if err != nil {
			t.Fatal(err)
		}
		v2, err := Pack(st, Options{Preset: a.Segments[0].Tensor.Layout.Preset, Dist: a.Segments[0].Tensor.Codebook.Dist})
		if err != nil {
			t.Fatal(err)
		}
		a2, err := ReadArchive(v2)
		if err != nil || a2.Version != codec.FormatVersion {
			t.Fatalf("%s packed again: version %v, %v", name, a2, err)
		}
		for i := range a2.Segments {
			if tt := a2.Segments[i].Tensor; tt != nil && (tt.Layout.FormatVersion() == codec.FormatVersion1) {
				t.Fatalf("%s packed again: %s is version 1", name, a2.Segments[i].Name)
			}
		}
		if back, err := Unpack(v2, nil); err != nil || !bytes.Equal(back, want) {
			t.Fatalf("%s packed again: unpack %v", name, err)
		}
	}
	if len(presets) != 4 {
		t.Fatalf("the version 1 files cover presets %v, want all four", presets)
	}
}

// readCommitted reads a committed .lct file of format version version and
// checks that it unpacks to want byte for byte, parses as that version and
// serialises back to its own bytes; it returns the file, its archive and
// what it unpacked to.
func readCommitted(t *testing.T, path string, want []byte, version int) ([]byte, *Archive, []byte) {
	t.Helper()
	name := filepath.Base(path)
	lct, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unpack(lct, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: unpacked file differs from the original", name)
	}
	// Read by pieces, from a stream and from a mapped file, as well.
	for _, in := range []*Input{streamInput(lct), fileInput(t, lct)} {
		var back bytes.Buffer
		if _, err := UnpackStream(context.Background(), in, &back, Options{Workers: 2}); err != nil || !bytes.Equal(back.Bytes(), want) {
			t.Fatalf("%s: unpacked by stream from %s (%v): the file differs from the original", name, in.Name(), err)
		}
	}
	a, err := ReadArchive(lct)
	if err != nil {
		t.Fatal(err)
	}
	if int(a.Version) != version {
		t.Fatalf("%s: version %d, want %d", name, a.Version, version)
	}
	if again, err := a.MarshalBinary(); err != nil || !bytes.Equal(again, lct) {
		t.Fatalf("%s: re-serialised archive differs (%v)", name, err)
	}
	return lct, a, got
}
