// Package gpu runs the LCT codec (docs/format.md) and the optimizer updates
// on an NVIDIA GPU, and polls the GPU through NVML.
//
// Two builds share these names. Built with -tags cuda, the package drives the
// GPU through gorgonia.org/cu with the kernels of package kernels; built
// without it, every constructor returns ErrNoCUDA, while NVML polling works
// in every build (it loads the driver's library at run time and reports its
// absence). Built with -tags kernelemu instead, the same kernel source runs on
// the CPU, one OS thread per CUDA thread: slow, but it lets the exactness
// tests run on a machine without a GPU.
//
// What the GPU produces is exactly what package codec produces: Codec
// implements lctfile.Backend and writes the same bytes. Device keeps tensors
// in device memory for training: Tensor is an LCT tensor there; the fused
// steps (SGDStepLCT, AdamWStepLCT) read compressed weights and optimizer
// state, update them with the trainer's formulas (SGDStep, AdamWStep) and
// write them compressed, in one pass over the data.
package gpu
