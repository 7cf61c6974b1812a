// Package examples holds small files for trying lcttop on a fresh clone;
// this test rebuilds the bundled example from the project's real tensors
// and checks that the committed file is exactly that.
package examples

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"lcttop/codec/safetensors"
	"lcttop/internal/testtensors"
)

var update = flag.Bool("update", false, "rewrite the bundled example from the real tensors")

// ExampleFile is the bundled example, and where its tensors come from.
const (
	ExampleFile = "char-gpt-weights.safetensors"
	sourceFile  = "step600_weight.safetensors"
)

// exampleTensors: three weight matrices of different roles (attention
// output projection in the first and last block, token embedding) and a
// LayerNorm bias, which is too small to gain from LCT and stays raw.
var exampleTensors = []string{"blocks.0.proj.weight", "blocks.3.proj.weight", "wte.weight", "blocks.0.ln1.bias"}

func buildExample(t *testing.T) []byte {
	t.Helper()
	src, err := safetensors.ReadFile(filepath.Join(testtensors.Dir(t), sourceFile))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]safetensors.TensorInfo{}
	for _, ti := range src.Tensors {
		byName[ti.Name] = ti
	}
	var out []safetensors.NewTensor
	for _, name := range exampleTensors {
		ti, ok := byName[name]
		if !ok {
			t.Fatalf("%s: no tensor %s", sourceFile, name)
		}
		out = append(out, safetensors.NewTensor{Name: ti.Name, DType: ti.DType, Shape: ti.Shape, Data: src.Bytes(ti)})
	}
	meta := map[string]string{"source": sourceFile + " (lcttop test tensors), four of its tensors"}
	for k, v := range src.Metadata {
		meta[k] = v
	}
	b, err := safetensors.Encode(out, meta)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBundledExample(t *testing.T) {
	want := buildExample(t)
	if *update {
		if err := os.WriteFile(ExampleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(ExampleFile)
	if err != nil {
		t.Fatalf("%v (run go test ./examples -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what its source tensors give (%d bytes, want %d); rebuild it with -update", ExampleFile, len(got), len(want))
	}
	if _, err := safetensors.Parse(got); err != nil {
		t.Errorf("%s: %v", ExampleFile, err)
	}
}
