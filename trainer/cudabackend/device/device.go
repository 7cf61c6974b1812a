// Package device is what the CUDA trainer backend needs of a GPU: memory,
// copies, launches of the GPT kernels (package kernels/gpt) and BF16 matrix
// products with float32 accumulation.
//
// Open returns the CUDA device, through the driver loaded at run time
// (package gpu/cuda); without a driver or GPU it says which is missing. The backend's tests also run on a CPU emulation of the same
// interface (package device/emu, build tag gptemu), which compiles gpt.cu as
// C++ and computes the products in Go, so that the whole backend can be
// checked on a machine without a GPU.
//
// A Device is not safe for concurrent use (one call at a time), but any
// goroutine may make the calls: the CUDA device makes its context current
// on the calling OS thread for the length of each call.
package device

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Ptr is a device address.
type Ptr uintptr

// Add returns p moved by bytes.
func (p Ptr) Add(bytes int64) Ptr { return Ptr(int64(p) + bytes) }

// DType is a matrix element type.
type DType uint8

// Element types of matrix products.
const (
	BF16 DType = iota
	F32
)

// Size is the element size in bytes.
func (t DType) Size() int64 {
	if t == F32 {
		return 4
	}
	return 2
}

func (t DType) String() string {
	if t == F32 {
		return "f32"
	}
	return "bf16"
}

// Mat is one operand of a product: address, element type, leading dimension
// (column-major, as cuBLAS counts: the distance in elements between columns)
// and, for batched products, the distance in elements between the batch's
// matrices.
type Mat struct {
	Ptr    Ptr
	Type   DType
	LD     int
	Stride int64
}

// Gemm is C = Alpha·op(A)·op(B) + Beta·C with column-major matrices: C is
// M×N, op(A) is M×K (A is K×M when TransA), op(B) is K×N (B is N×K when
// TransB). A and B are BF16; C is BF16 or F32; sums run in float32. Batch > 1
// repeats the product at the operands' strides.
type Gemm struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	A, B, C        Mat
	Batch          int
}

// Check reports a product whose shapes do not fit together.
func (g Gemm) Check() error {
	ar, br := g.M, g.K // rows of A and B as stored
	if g.TransA {
		ar = g.K
	}
	if g.TransB {
		br = g.N
	}
	switch {
	case g.M < 1 || g.N < 1 || g.K < 1:
		return fmt.Errorf("gemm %dx%dx%d: sizes must be positive", g.M, g.N, g.K)
	case g.A.Type != BF16 || g.B.Type != BF16:
		return fmt.Errorf("gemm: A and B must be bf16 (are %s, %s)", g.A.Type, g.B.Type)
	case g.A.LD < ar:
		return fmt.Errorf("gemm: lda %d < %d rows of A", g.A.LD, ar)
	case g.B.LD < br:
		return fmt.Errorf("gemm: ldb %d < %d rows of B", g.B.LD, br)
	case g.C.LD < g.M:
		return fmt.Errorf("gemm: ldc %d < %d rows of C", g.C.LD, g.M)
	case g.A.Ptr == 0 || g.B.Ptr == 0 || g.C.Ptr == 0:
		return errors.New("gemm: nil operand")
	case g.Batch > math.MaxInt32:
		return fmt.Errorf("gemm: batch %d too large", g.Batch)
	}
	return nil
}

// Device is a GPU, or its emulation.
type Device interface {
	// Name names the GPU (or the emulation).
	Name() string
	// Alloc returns bytes of device memory, contents undefined.
	Alloc(bytes int64) (Ptr, error)
	// Free releases memory from Alloc.
	Free(p Ptr) error
	// Upload copies src to dst after the work queued before it.
	Upload(dst Ptr, src []byte) error
	// Download copies src to dst once the work queued before it is done.
	Download(dst []byte, src Ptr) error
	// Memset sets bytes bytes at p to b (queued).
	Memset(p Ptr, b byte, bytes int64) error
	// Copy copies bytes device to device (queued).
	Copy(dst, src Ptr, bytes int64) error
	// Launch queues kernel (a name from kernels/gpt.Kernels) on a 1-D grid.
	// Arguments are Ptr, int32, int64 or float32, matching the kernel's
	// parameters (int, long long, float, pointers) one for one.
	Launch(kernel string, grid, block int, args ...any) error
	// Gemm queues a matrix product.
	Gemm(g Gemm) error
	// Sync waits for the queued work and reports what failed in it.
	Sync() error
	// Close releases the device; memory not freed is released with it.
	Close() error
}

// PackArgs turns launch arguments into 8-byte slots (the value in the low
// bytes) and their sizes, as both cuLaunchKernel and the emulation take them.
func PackArgs(args []any) (slots []uint64, sizes []uint8, err error) {
	slots = make([]uint64, len(args))
	sizes = make([]uint8, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case Ptr:
			slots[i], sizes[i] = uint64(v), 8
		case int32:
			slots[i], sizes[i] = uint64(uint32(v)), 4
		case int64:
			slots[i], sizes[i] = uint64(v), 8
		case float32:
			slots[i], sizes[i] = uint64(math.Float32bits(v)), 4
		default:
			return nil, nil, fmt.Errorf("launch argument %d: type %T (want device.Ptr, int32, int64 or float32)", i, a)
		}
	}
	return slots, sizes, nil
}

// Bytes views BF16 values as bytes, for Upload and Download.
func Bytes(v []uint16) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 2*len(v))
}

// F32Bytes views float32 values as bytes.
func F32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// I32Bytes views int32 values as bytes.
func I32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
