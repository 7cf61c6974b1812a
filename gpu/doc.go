// Package gpu runs the LCT codec (docs/format.md) and the optimizer updates
// on an NVIDIA GPU, and polls the GPU through NVML.
//
// The package is lcttop's one device layer. It drives the GPU through the
// CUDA driver and cuBLAS, both loaded at run time (packages gpu/cuda and
// gpu/cublas), with the kernels of package kernels; where there is no driver
// or no GPU, OpenDevice says which. NVML polling loads its library at run
// time too. OpenEmulated runs the same kernel source on the CPU instead
// (package kernels' emulation): slow, but it lets every GPU test run on a
// machine without a GPU.
//
// A Device has two views. Its own methods are the codec: tensors, encodes,
// decodes, batches, fused updates, on the side stream once UseSideStream is
// on. Compute is what a training step drives: memory, copies, the GPT
// kernels and matrix products on the default stream: on a GPU a stream of
// the context's greatest priority that keeps the legacy default stream's
// implicit ordering, so that where the trainer's kernels and the side
// stream's wait for the same multiprocessors the trainer's start first.
//
// What the GPU produces is exactly what package codec produces: Codec
// implements lctfile.Backend and writes the same bytes. Device keeps tensors
// in device memory for training: Tensor is an LCT tensor there; the fused
// steps (SGDStepLCT, AdamWStepLCT) read compressed weights and optimizer
// state, update them with the trainer's formulas (SGDStep, AdamWStep) and
// write them compressed, in one pass over the data.
package gpu
