// Package kernels holds the CUDA kernels of the LCT codec and of the fused
// optimizer updates: their source (lct.cu) and the PTX that nvcc 11.8 makes
// of it for compute_80, committed and embedded, so that building lcttop
// needs no CUDA compiler. The driver compiles the PTX for the GPU at hand
// (Ampere, Hopper) when package gpu loads it.
//
// Regenerate after editing lct.cu with `go generate ./kernels` (nvcc 11.8);
// check_ptx.sh fails when the committed PTX of this folder or of
// kernels/gpt is stale.
package kernels

//go:generate nvcc -ptx -arch=compute_80 -O3 -o lct.ptx lct.cu

import _ "embed"

// PTX is the kernels' PTX module.
//
//go:embed lct.ptx
var PTX string

// Source is lct.cu and EmuHeader lct_emu.h: the CPU emulation (package gpu,
// build tag kernelemu) compiles them as C++, and embedding them here makes a
// change to either rebuild it.
//
//go:embed lct.cu
var Source string

//go:embed lct_emu.h
var EmuHeader string
