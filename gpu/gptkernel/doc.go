// Package gptkernel launches the GPT training kernels of kernels/gpt.cu, one
// typed function per kernel: each takes the stream to queue it on, its grid
// and block, and the kernel's parameters as Go types (a device pointer as
// gpu.Ptr, int as int32, long long as int64, float as float32), so that a
// launch with a wrong argument does not compile.
//
// launch_gen.go is generated from the kernels' source; after editing a
// kernel's parameters run `go generate ./gpu/gptkernel` (a test fails while
// the generated file is stale).
package gptkernel

//go:generate go run ./internal/genlaunch -out launch_gen.go

// Stream is where a kernel is queued: the compute stream (*gpu.Compute) or
// a view of it that times or checks its launches. Launch queues the named
// kernel of kernels.GPTKernels with its arguments packed by gpu.PackArgs.
type Stream interface {
	Launch(kernel string, grid, block int, args ...any) error
}
