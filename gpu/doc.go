// Package gpu runs the LCT codec (docs/format.md) and the optimizer updates
// on an NVIDIA GPU, and polls the GPU through NVML.
//
// The package drives the GPU through the CUDA driver, loaded at run time
// (package gpu/cuda), with the kernels of package kernels; where there is no
// driver or no GPU, OpenDevice says which. NVML polling loads its library at
// run time too. Built with -tags kernelemu, the same kernel source runs on
// the CPU instead, one OS thread per CUDA thread: slow, but it lets the
// exactness tests run on a machine without a GPU.
//
// What the GPU produces is exactly what package codec produces: Codec
// implements lctfile.Backend and writes the same bytes. Device keeps tensors
// in device memory for training: Tensor is an LCT tensor there; the fused
// steps (SGDStepLCT, AdamWStepLCT) read compressed weights and optimizer
// state, update them with the trainer's formulas (SGDStep, AdamWStep) and
// write them compressed, in one pass over the data.
package gpu
