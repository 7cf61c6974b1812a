//go:build gptemu

// Package emu is a CPU emulation of device.Device for tests: the GPT
// kernels of kernels/gpt/gpt.cu compiled as C++ and run block by block, and
// matrix products computed in Go with cuBLAS's conventions (column-major,
// float32 sums in ascending k, products never fused). It is slow and meant
// for small shapes; it lets the CUDA backend's exactness tests run where
// there is no GPU. Memory comes from C's allocator, filled with 0xFF bytes
// (NaN as BF16 and float32) so that an output a kernel fails to write shows.
// Copies and products are checked against the allocations they touch.
package emu

/*
#cgo CXXFLAGS: -std=c++20 -O2 -I${SRCDIR}/../../../../kernels/gpt
// The CUDA built-ins get names of their own, so that this emulation links
// beside package gpu's (build tag kernelemu), which defines the same ones.
#cgo CXXFLAGS: -DthreadIdx=gpt_emu_threadIdx -DblockIdx=gpt_emu_blockIdx -DblockDim=gpt_emu_blockDim -DgridDim=gpt_emu_gridDim
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int gpt_emu_has(const char* name);
int gpt_emu_launch(const char* name, unsigned grid, unsigned block, const uint64_t* slots, const uint8_t* sizes, int n,
                   char* err, int errLen);
*/
import "C"

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"unsafe"

	"lcttop/trainer/bf16"
	"lcttop/trainer/cudabackend/device"
)

// Has reports whether the emulation's kernel table has kernel.
func Has(kernel string) bool {
	c := C.CString(kernel)
	defer C.free(unsafe.Pointer(c))
	return C.gpt_emu_has(c) != 0
}

type alloc struct {
	base unsafe.Pointer
	size int64
}

// Device is the emulated device.
type Device struct {
	allocs map[device.Ptr]alloc
	sorted []device.Ptr // allocation addresses, ascending; nil when stale
	live   int64
}

// Open returns an emulated device.
func Open() (*Device, error) { return &Device{allocs: map[device.Ptr]alloc{}}, nil }

var _ device.Device = (*Device)(nil)

// Name implements device.Device.
func (d *Device) Name() string { return "CPU emulation of kernels/gpt" }

// Live is the memory currently allocated, in bytes.
func (d *Device) Live() int64 { return d.live }

// Alloc implements device.Device.
func (d *Device) Alloc(bytes int64) (device.Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("emu: alloc of %d bytes", bytes)
	}
	p := C.malloc(C.size_t(bytes))
	if p == nil {
		return 0, fmt.Errorf("emu: out of memory for %d bytes", bytes)
	}
	C.memset(p, 0xFF, C.size_t(bytes))
	ptr := device.Ptr(uintptr(p))
	d.allocs[ptr] = alloc{p, bytes}
	d.sorted = nil
	d.live += bytes
	return ptr, nil
}

// Free implements device.Device.
func (d *Device) Free(p device.Ptr) error {
	a, ok := d.allocs[p]
	if !ok {
		return fmt.Errorf("emu: free of %#x, which is not an allocation", uintptr(p))
	}
	C.free(a.base)
	delete(d.allocs, p)
	d.sorted = nil
	d.live -= a.size
	return nil
}

// view returns bytes bytes at p, which must lie inside one allocation.
func (d *Device) view(p device.Ptr, bytes int64, what string) ([]byte, error) {
	if d.sorted == nil {
		for k := range d.allocs {
			d.sorted = append(d.sorted, k)
		}
		sort.Slice(d.sorted, func(i, j int) bool { return d.sorted[i] < d.sorted[j] })
	}
	i := sort.Search(len(d.sorted), func(i int) bool { return d.sorted[i] > p }) - 1
	if i < 0 {
		return nil, fmt.Errorf("emu: %s at %#x: not in any allocation", what, uintptr(p))
	}
	base := d.sorted[i]
	a := d.allocs[base]
	off := int64(p - base)
	if bytes < 0 || off+bytes > a.size {
		return nil, fmt.Errorf("emu: %s at %#x, %d bytes: past the end of its %d-byte allocation (offset %d)", what, uintptr(p), bytes, a.size, off)
	}
	if bytes == 0 {
		return nil, nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(a.base, off)), bytes), nil
}

// Upload implements device.Device.
func (d *Device) Upload(dst device.Ptr, src []byte) error {
	v, err := d.view(dst, int64(len(src)), "upload")
	if err != nil {
		return err
	}
	copy(v, src)
	return nil
}

// Download implements device.Device.
func (d *Device) Download(dst []byte, src device.Ptr) error {
	v, err := d.view(src, int64(len(dst)), "download")
	if err != nil {
		return err
	}
	copy(dst, v)
	return nil
}

// Memset implements device.Device.
func (d *Device) Memset(p device.Ptr, b byte, bytes int64) error {
	v, err := d.view(p, bytes, "memset")
	if err != nil {
		return err
	}
	for i := range v {
		v[i] = b
	}
	return nil
}

// Copy implements device.Device.
func (d *Device) Copy(dst, src device.Ptr, bytes int64) error {
	s, err := d.view(src, bytes, "copy source")
	if err != nil {
		return err
	}
	t, err := d.view(dst, bytes, "copy destination")
	if err != nil {
		return err
	}
	copy(t, s)
	return nil
}

// Launch implements device.Device.
func (d *Device) Launch(kernel string, grid, block int, args ...any) error {
	if grid < 1 || block < 1 || block > 1024 {
		return fmt.Errorf("emu: launch %s: grid %d, block %d", kernel, grid, block)
	}
	slots, sizes, err := device.PackArgs(args)
	if err != nil {
		return fmt.Errorf("emu: launch %s: %w", kernel, err)
	}
	for i, a := range args {
		if p, ok := a.(device.Ptr); ok && p != 0 {
			if _, err := d.view(p, 0, fmt.Sprintf("launch %s argument %d", kernel, i)); err != nil {
				return err
			}
		}
	}
	name := C.CString(kernel)
	defer C.free(unsafe.Pointer(name))
	var msg [256]C.char
	var ps *C.uint64_t
	var pz *C.uint8_t
	if len(slots) > 0 {
		ps = (*C.uint64_t)(unsafe.Pointer(&slots[0]))
		pz = (*C.uint8_t)(unsafe.Pointer(&sizes[0]))
	}
	if C.gpt_emu_launch(name, C.uint(grid), C.uint(block), ps, pz, C.int(len(slots)), &msg[0], C.int(len(msg))) != 0 {
		return fmt.Errorf("emu: launch %s: %s", kernel, C.GoString(&msg[0]))
	}
	return nil
}

// operand returns the view of one Gemm operand: rows×cols column-major with
// leading dimension ld, batch matrices stride apart.
func (d *Device) operand(m device.Mat, rows, cols, batch int, what string) ([]byte, error) {
	extent := int64(cols-1)*int64(m.LD) + int64(rows)
	if batch > 1 {
		extent += int64(batch-1) * m.Stride
	}
	return d.view(m.Ptr, extent*m.Type.Size(), "gemm operand "+what)
}

// Gemm implements device.Device with float32 sums in ascending k.
func (d *Device) Gemm(g device.Gemm) error {
	if err := g.Check(); err != nil {
		return fmt.Errorf("emu: %w", err)
	}
	batch := max(g.Batch, 1)
	ar, ac := g.M, g.K
	if g.TransA {
		ar, ac = g.K, g.M
	}
	br, bc := g.K, g.N
	if g.TransB {
		br, bc = g.N, g.K
	}
	av, err := d.operand(g.A, ar, ac, batch, "A")
	if err != nil {
		return err
	}
	bv, err := d.operand(g.B, br, bc, batch, "B")
	if err != nil {
		return err
	}
	cv, err := d.operand(g.C, g.M, g.N, batch, "C")
	if err != nil {
		return err
	}
	a := unsafe.Slice((*uint16)(unsafe.Pointer(&av[0])), len(av)/2)
	b := unsafe.Slice((*uint16)(unsafe.Pointer(&bv[0])), len(bv)/2)
	var c16 []uint16
	var c32 []float32
	if g.C.Type == device.F32 {
		c32 = unsafe.Slice((*float32)(unsafe.Pointer(&cv[0])), len(cv)/4)
	} else {
		c16 = unsafe.Slice((*uint16)(unsafe.Pointer(&cv[0])), len(cv)/2)
	}
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			col := make([]float32, g.K)
			for job := w; job < batch*g.N; job += workers {
				bi, j := job/g.N, job%g.N
				for p := range g.K {
					var x uint16
					if g.TransB {
						x = b[int64(bi)*g.B.Stride+int64(p)*int64(g.B.LD)+int64(j)]
					} else {
						x = b[int64(bi)*g.B.Stride+int64(j)*int64(g.B.LD)+int64(p)]
					}
					col[p] = bf16.ToFloat32(x)
				}
				for i := range g.M {
					var acc float32
					for p := range g.K {
						var x uint16
						if g.TransA {
							x = a[int64(bi)*g.A.Stride+int64(i)*int64(g.A.LD)+int64(p)]
						} else {
							x = a[int64(bi)*g.A.Stride+int64(p)*int64(g.A.LD)+int64(i)]
						}
						acc += float32(bf16.ToFloat32(x) * col[p])
					}
					v := float32(g.Alpha * acc)
					ci := int64(bi)*g.C.Stride + int64(j)*int64(g.C.LD) + int64(i)
					if c32 != nil {
						if g.Beta != 0 {
							v += float32(g.Beta * c32[ci])
						}
						c32[ci] = v
					} else {
						if g.Beta != 0 {
							v += float32(g.Beta * bf16.ToFloat32(c16[ci]))
						}
						c16[ci] = bf16.FromFloat32(v)
					}
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// Sync implements device.Device (the emulation runs everything at once).
func (d *Device) Sync() error { return nil }

// Close implements device.Device, freeing what is still allocated.
func (d *Device) Close() error {
	for p := range d.allocs {
		d.Free(p)
	}
	return nil
}
