//go:build !cuda

package main

import "testing"

// A build without the cuda tag says in one line how to get the CUDA
// backend, and fails.
func TestTrainCUDANotBuilt(t *testing.T) {
	r := lcttop(t, trainArgs("--backend", "cuda", "--steps", "1")...)
	const want = "lcttop: --backend cuda: built without CUDA: rebuild with -tags cuda\n"
	if r.code == 0 || r.stderr != want || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want a failure saying %q", r.code, r.stdout, r.stderr, want)
	}
}
