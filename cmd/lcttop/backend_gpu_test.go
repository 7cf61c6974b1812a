package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"lcttop/gpu"
	"lcttop/internal/testtensors"
)

// execute runs one lcttop subcommand in process (this build's GPU codec is
// the one under test; the binary that TestMain builds has none).
func execute(t *testing.T, newCmd func() *cobra.Command, args ...string) {
	t.Helper()
	cmd := newCmd()
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%s %v: %v", cmd.Name(), args, err)
	}
}

// --backend cuda writes the same .lct bytes as the CPU codec, asked for the
// same format version, and unpacks them byte for byte: on the GPU, or where
// there is none through the kernels' CPU emulation.
func TestCUDABackendMatchesCPU(t *testing.T) {
	onGPU := useGPUOrEmulation(t)
	dir := t.TempDir()
	// The bundled example keeps the emulation's run short; on a GPU the
	// real tensor files go through too.
	files := []string{filepath.Join("..", "..", "examples", "char-gpt-weights.safetensors")}
	if onGPU {
		files = append(files, testtensors.Files(t)...)
	}
	for _, in := range files {
		// Format version 3 (the default) and version 2.
		for _, opts := range [][]string{{"--preset", "clean", "--dist", "gaussian"}, {"--preset", "auto", "--dist", "empirical"}, {"--format-version", "2", "--preset", "auto", "--dist", "empirical"}} {
			cpu, gpu := filepath.Join(dir, "cpu.lct"), filepath.Join(dir, "gpu.lct")
			back := filepath.Join(dir, "back.safetensors")
			execute(t, newPackCmd, append(opts, in, cpu)...)
			execute(t, newPackCmd, append(opts, "--backend", "cuda", in, gpu)...)
			if !bytes.Equal(readFile(t, cpu), readFile(t, gpu)) {
				t.Errorf("%s %v: the CUDA backend wrote other bytes than the CPU codec", filepath.Base(in), opts)
			}
			execute(t, newUnpackCmd, "--backend", "cuda", gpu, back)
			if !bytes.Equal(readFile(t, back), readFile(t, in)) {
				t.Errorf("%s %v: unpack through the CUDA backend differs from the original", filepath.Base(in), opts)
			}
		}
	}
}

// useGPUOrEmulation reports whether this machine has a usable GPU; where it
// has none, it makes the test's GPU paths run on the CPU emulation.
func useGPUOrEmulation(t *testing.T) bool {
	if os.Getenv(gpu.EmulateEnv) != "1" {
		d, err := gpu.OpenDevice(0)
		if err == nil {
			d.Close()
			return true
		}
		if os.Getenv(gpu.RequireEnv) == "1" {
			t.Fatal(err)
		}
	}
	t.Setenv(gpu.EmulateEnv, "1")
	return false
}
