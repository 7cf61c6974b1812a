package cudabackend

import "lcttop/gpu"

// Device is what the backend needs of a GPU for the model's step: memory,
// copies, launches of the GPT kernels and BF16 matrix products with float32
// accumulation, queued in order. gpu.Compute is one (on a GPU or the CPU
// emulation); Profiled wraps one to time each operation.
type Device interface {
	// Name names the GPU (or the emulation).
	Name() string
	// Alloc returns bytes of device memory, contents undefined.
	Alloc(bytes int64) (gpu.Ptr, error)
	// Free releases memory from Alloc.
	Free(p gpu.Ptr) error
	// Upload copies src to dst after the work queued before it.
	Upload(dst gpu.Ptr, src []byte) error
	// Download copies src to dst once the work queued before it is done.
	Download(dst []byte, src gpu.Ptr) error
	// Memset sets bytes bytes at p to b (queued).
	Memset(p gpu.Ptr, b byte, bytes int64) error
	// Copy copies bytes device to device (queued).
	Copy(dst, src gpu.Ptr, bytes int64) error
	// Launch queues kernel (a name from kernels.GPTKernels) on a 1-D grid.
	Launch(kernel string, grid, block int, args ...any) error
	// Gemm queues a matrix product.
	Gemm(g gpu.Gemm) error
	// Sync waits for the queued work and reports what failed in it.
	Sync() error
	// Scope names the op whose launches follow, until end is called, for
	// a device that attributes its work to ops (Profiled); a scope opened
	// inside another keeps the outer name.
	Scope(name string) (end func())
}

var _ Device = (*gpu.Compute)(nil)
