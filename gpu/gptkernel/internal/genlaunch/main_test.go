package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"lcttop/kernels"
)

// TestGeneratedIsCurrent fails while launch_gen.go is not what the kernels'
// source makes: run `go generate ./gpu/gptkernel`.
func TestGeneratedIsCurrent(t *testing.T) {
	want, err := generate(kernels.GPTSource)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../launch_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("gpu/gptkernel/launch_gen.go is stale: run go generate ./gpu/gptkernel")
	}
}

// TestEveryKernel checks the source's entry points are kernels.GPTKernels,
// the list the module is loaded by, one launcher each under its own name.
func TestEveryKernel(t *testing.T) {
	ks, err := parse(kernels.GPTSource)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	goNames := map[string]string{}
	for _, k := range ks {
		names = append(names, k.name)
		if other, ok := goNames[goName(k.name)]; ok {
			t.Errorf("%s and %s both launched by %s", other, k.name, goName(k.name))
		}
		goNames[goName(k.name)] = k.name
	}
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(kernels.GPTKernels))) {
		t.Errorf("source's kernels %v, kernels.GPTKernels %v", names, kernels.GPTKernels)
	}
}

// TestParseRefuses checks a parameter the launchers cannot type, or one
// named as the launcher's own, is an error naming the kernel.
func TestParseRefuses(t *testing.T) {
	for _, src := range []string{
		`extern "C" __global__ void gpt_x(double d) {}`,
		`extern "C" __global__ void gpt_x(float* y, int grid) {}`,
		`extern "C" __global__ void gpt_x(float*) {}`,
		`no kernels here`,
	} {
		if _, err := parse(src); err == nil || !strings.Contains(src, "gpt_x") == strings.Contains(err.Error(), "gpt_x") {
			t.Errorf("%q: %v", src, err)
		}
	}
}
