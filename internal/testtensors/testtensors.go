// Package testtensors finds the real BF16 training tensors that tests and
// benchmarks run on: the safetensors files in shared/data/tensors beside the
// repository (LCTTOP_TENSORS overrides the folder).
package testtensors

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"lcttop/codec/safetensors"
)

// EnvVar names the variable that overrides the tensor folder.
const EnvVar = "LCTTOP_TENSORS"

// NamedTensor is one BF16 tensor of a file.
type NamedTensor struct {
	Name   string
	Values []uint16
}

// Dir returns the tensor folder. The files are part of the project's test
// data, so their absence fails the test rather than skipping it.
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv(EnvVar); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "..", "shared", "data", "tensors")
			if _, err := os.Stat(d); err != nil {
				tb.Fatalf("real tensors not found at %s (set %s): %v", d, EnvVar, err)
			}
			return d
		}
		if filepath.Dir(dir) == dir {
			tb.Fatalf("no go.mod above %s: cannot find the repository root", wd)
		}
	}
}

// Files lists the safetensors files, sorted.
func Files(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(Dir(tb), "*.safetensors"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Fatalf("no .safetensors files in %s", Dir(tb))
	}
	sort.Strings(files)
	return files
}

// LoadBF16 returns the BF16 tensors of the file at path, in file order.
func LoadBF16(tb testing.TB, path string) []NamedTensor {
	tb.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	var out []NamedTensor
	for _, t := range f.Tensors {
		if t.DType == "BF16" {
			out = append(out, NamedTensor{Name: t.Name, Values: safetensors.BF16Values(f.Bytes(t))})
		}
	}
	return out
}
