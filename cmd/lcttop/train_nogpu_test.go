package main

import (
	"strings"
	"testing"

	"lcttop/gpu/cuda"
)

// On a machine without an NVIDIA driver or GPU, what needs the GPU says so
// in one line, naming the library it did not find or the driver's answer,
// and fails.
func TestCUDAWithoutDriver(t *testing.T) {
	err := cuda.Load()
	if err == nil {
		t.Skip("this machine has a usable CUDA GPU; the test is for machines without one")
	}
	why := "libcuda.so.1 not found"
	if strings.Contains(err.Error(), "cuInit") {
		why = "no usable CUDA GPU"
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		trainArgs("--backend", "cuda", "--steps", "1"),
		{"train", "--backend", "cuda", "--steps", "1"}, // the UI: refused before it opens
		{"--backend", "cuda"},
		{"pack", "--backend", "cuda", "../../examples/char-gpt-weights.safetensors", dir + "/o.lct"},
		{"bench"},
	} {
		r := lcttop(t, args...)
		if r.code == 0 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, why) {
			t.Errorf("lcttop %v: exit %d, stdout %q, stderr %q; want a one-line failure saying %q", args, r.code, r.stdout, r.stderr, why)
		}
	}
}
