package main

import (
	"strings"
	"testing"

	"lcttop/gpu/cuda"
)

// On a machine without an NVIDIA driver or GPU, what needs the GPU says so
// in one line, naming the library it did not find or the driver's answer,
// and fails. On a machine with a GPU, the commands run with every device
// hidden from the driver, which then answers as on a machine without one.
func TestCUDAWithoutDriver(t *testing.T) {
	var env []string
	why := "no usable CUDA GPU"
	if err := cuda.Load(); err == nil {
		env = []string{"CUDA_VISIBLE_DEVICES="}
	} else if !strings.Contains(err.Error(), "cuInit") {
		why = "libcuda.so.1 not found"
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		trainArgs("--backend", "cuda", "--steps", "1"),
		{"train", "--backend", "cuda", "--steps", "1"}, // the UI: refused before it opens
		{"--backend", "cuda"},
		{"pack", "--backend", "cuda", "../../examples/char-gpt-weights.safetensors", dir + "/o.lct"},
		{"bench"},
	} {
		r := lcttopWithEnv(t, env, args...)
		if r.code == 0 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, why) {
			t.Errorf("lcttop %v: exit %d, stdout %q, stderr %q; want a one-line failure saying %q", args, r.code, r.stdout, r.stderr, why)
		}
	}
}
