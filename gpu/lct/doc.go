// Package lct is the GPU LCT codec of the CUDA trainer, whole: one Codec
// that takes a tensor from its dense values in the trainer's device memory
// to its compressed form and back with package gpu's kernels, on gpu's side
// stream beside the trainer's work. It owns the pipeline: the queue of
// encodes launched as one batch, windows closed and settled a window
// later, the histogram arena, codebook refits, overflow room and the
// encodes made again, and its figures. Memory comes from the run's Memory,
// which counts it. NewReference gives the reference codec (package codec
// on the host) behind the same type.
package lct
