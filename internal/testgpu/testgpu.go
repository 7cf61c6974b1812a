// Package testgpu is what the GPU tests of several packages (gpu/lct,
// trainer/cudabackend) run on: the device, opened once per test binary or
// fresh for a test, the tensors the codec tests encode, and the helpers that
// move a test's tensors to and from device memory (Buffers).
package testgpu

import (
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/internal/testtensors"
	"lcttop/session"
	"lcttop/trainer"
)

var shared struct {
	once sync.Once
	dev  *gpu.Device
	err  error
}

// open opens the GPU, or where there is none (or LCTTOP_EMULATE=1) the CPU
// emulation of its kernels; with gpu.RequireEnv set a GPU that does not
// open is an error.
func open() (*gpu.Device, error) {
	if os.Getenv("LCTTOP_EMULATE") != "1" {
		if d, err := gpu.OpenDevice(0); err == nil || os.Getenv(gpu.RequireEnv) == "1" {
			return d, err
		}
	}
	return gpu.OpenEmulated()
}

// Shared is the device, opened once for the whole test binary: tests on
// the emulation see the same device kind throughout.
func Shared(t testing.TB) *gpu.Device {
	t.Helper()
	shared.once.Do(func() { shared.dev, shared.err = open() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.dev
}

// Fresh opens a device of the test's own (its codec state and side stream
// its own) on the same GPU or emulation as Shared, closed when the test
// ends.
func Fresh(t testing.TB) *gpu.Device {
	t.Helper()
	open := gpu.OpenEmulated
	if !Shared(t).Emulated() {
		open = func() (*gpu.Device, error) { return gpu.OpenDevice(0) }
	}
	d, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// CodecModel is the GPT of the GPU codec's training tests: one block, so
// that they finish in a couple of minutes on the CPU emulation, which runs
// every CTA's 256 threads as OS threads.
var CodecModel = trainer.ModelConfig{Name: "codec-test", Layers: 1, Dim: 32, Heads: 2, Context: 16, Batch: 2, SeqLen: 8}

// CodecTensors are the tensors the codec tests encode: real weights,
// gradients, optimizer states and activations (the first of each file),
// the starting weights of CodecModel, and all-zero and tiny tensors.
func CodecTensors(t testing.TB) map[string][]uint16 {
	out := map[string][]uint16{}
	for _, f := range testtensors.Files(t) {
		if ts := testtensors.LoadBF16(t, f); len(ts) > 0 {
			out[filepath.Base(f)+":"+ts[0].Name] = ts[0].Values
		}
	}
	for name, v := range trainer.InitialValues(CodecModel, 3) {
		out["init:"+name] = v
	}
	out["zeros"] = make([]uint16, 70000)
	out["one"] = []uint16{0x3f80}
	return out
}

// SpillingTensor is the first of CodecTensors (by name, of 4096 values or
// more) whose encode under cc spills, so that its first encode, with no
// overflow room yet, does not fit; and its name.
func SpillingTensor(t testing.TB, cc session.ClassCodec) ([]uint16, string) {
	t.Helper()
	tensors := CodecTensors(t)
	names := make([]string, 0, len(tensors))
	for name := range tensors {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := tensors[name]
		if len(v) < 4096 {
			continue
		}
		sample := codec.SampleHistogram(v)
		cb := codec.FitCodebook(cc.Dist, &sample)
		var ct codec.Tensor
		var enc codec.Encoder
		if err := enc.Encode(&ct, v, cb, codec.ChooseLayout(cc.Preset, &cb, &sample).WithVersion(codec.FormatVersion2)); err != nil {
			t.Fatal(err)
		}
		if ct.Stats.Spilled > 0 && len(ct.Overflow) > 0 {
			return v, name
		}
	}
	t.Fatal("no test tensor spills: the overflow path would not be exercised")
	return nil, ""
}
