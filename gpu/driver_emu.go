//go:build cgo

package gpu

/*
#include <stdlib.h>
#include <string.h>
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"time"
	"unsafe"

	"lcttop/kernels"
)

// emuDriver runs the kernels on the CPU (package kernels' emulation):
// device memory is host memory from C's allocator, poisoned so that what a
// kernel reads without anything having written it shows; launches, copies
// and products run to completion before they return, so every stream is one
// order of work. Copies, products and pointer arguments are checked against
// the allocations they touch. Every emulated Device shares one memory, as
// the Devices of a GPU share its context's.
type emuDriver struct {
	emuStream              // the codec's stream, and the compute stream: one order
	own       map[Ptr]bool // what this driver allocated, freed at close
}

// emuStream is the emulation's one order of work.
type emuStream struct{ e *emuDriver }

// emuMemory is the emulated GPU's memory: its allocations' sizes.
var emuMemory struct {
	sync.Mutex
	allocs map[Ptr]int
	sorted []Ptr // allocation addresses, ascending; nil when stale
}

// emuAlign is the alignment of emulated allocations, as cuMemAlloc's.
const emuAlign = 256

func openEmuDriver() (driver, error) {
	e := &emuDriver{own: map[Ptr]bool{}}
	e.emuStream.e = e
	return e, nil
}

func (e *emuDriver) compute() stream { return &e.emuStream }

// host turns a device address of the emulation into a pointer; written with
// a pointer conversion so that vet sees no uintptr arithmetic.
func (p Ptr) host() unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

func (e *emuDriver) enter() error       { return nil }
func (e *emuDriver) makeCurrent() error { return nil }

func (e *emuDriver) prepareCompute() error { return nil }
func (e *emuDriver) exit()                 {}

func (e *emuDriver) info() deviceInfo {
	return deviceInfo{Name: "CPU emulation of the kernels", SMs: 2, MaxSmemPerBlock: 227 << 10, Emulated: true}
}

func (e *emuDriver) alloc(bytes int) (Ptr, error) {
	size := (max(bytes, 1) + emuAlign - 1) / emuAlign * emuAlign
	p := C.aligned_alloc(emuAlign, C.size_t(size))
	if p == nil {
		return 0, fmt.Errorf("out of host memory for %d bytes", bytes)
	}
	C.memset(p, 0xA5, C.size_t(size))
	ptr := Ptr(uintptr(p))
	m := &emuMemory
	m.Lock()
	defer m.Unlock()
	if m.allocs == nil {
		m.allocs = map[Ptr]int{}
	}
	m.allocs[ptr] = bytes
	m.sorted = nil
	e.own[ptr] = true
	return ptr, nil
}

func (e *emuDriver) free(p Ptr) error {
	m := &emuMemory
	m.Lock()
	defer m.Unlock()
	if _, ok := m.allocs[p]; !ok {
		return fmt.Errorf("free of %#x, which is not an allocation", uintptr(p))
	}
	C.free(p.host())
	delete(m.allocs, p)
	delete(e.own, p)
	m.sorted = nil
	return nil
}

// view returns bytes bytes at p, which must lie inside one allocation.
func (e *emuDriver) view(p Ptr, bytes int64, what string) ([]byte, error) {
	m := &emuMemory
	m.Lock()
	defer m.Unlock()
	if m.sorted == nil {
		for k := range m.allocs {
			m.sorted = append(m.sorted, k)
		}
		sort.Slice(m.sorted, func(i, j int) bool { return m.sorted[i] < m.sorted[j] })
	}
	i := sort.Search(len(m.sorted), func(i int) bool { return m.sorted[i] > p }) - 1
	if i < 0 {
		return nil, fmt.Errorf("%s at %#x: not in any allocation", what, uintptr(p))
	}
	base := m.sorted[i]
	size := int64(m.allocs[base])
	off := int64(p - base)
	if bytes < 0 || off+bytes > max(size, 1) {
		return nil, fmt.Errorf("%s at %#x, %d bytes: past the end of its %d-byte allocation (offset %d)", what, uintptr(p), bytes, size, off)
	}
	if bytes == 0 {
		return nil, nil
	}
	return unsafe.Slice((*byte)(p.host()), bytes), nil
}

func (s *emuStream) htod(dst Ptr, src unsafe.Pointer, bytes int) error {
	v, err := s.e.view(dst, int64(bytes), "upload")
	if err != nil {
		return err
	}
	copy(v, unsafe.Slice((*byte)(src), bytes))
	return nil
}

func (s *emuStream) dtoh(dst unsafe.Pointer, src Ptr, bytes int) error {
	v, err := s.e.view(src, int64(bytes), "download")
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), bytes), v)
	return nil
}

func (s *emuStream) dtohAsync(dst unsafe.Pointer, src Ptr, bytes int) error {
	return s.dtoh(dst, src, bytes)
}

func (s *emuStream) dtod(dst, src Ptr, bytes int) error {
	from, err := s.e.view(src, int64(bytes), "copy source")
	if err != nil {
		return err
	}
	to, err := s.e.view(dst, int64(bytes), "copy destination")
	if err != nil {
		return err
	}
	copy(to, from)
	return nil
}

func (s *emuStream) memset8(dst Ptr, b byte, bytes int) error {
	v, err := s.e.view(dst, int64(bytes), "memset")
	if err != nil {
		return err
	}
	for i := range v {
		v[i] = b
	}
	return nil
}

func (s *emuStream) memset32(dst Ptr, v uint32, words int) error {
	b, err := s.e.view(dst, 4*int64(words), "memset")
	if err != nil {
		return err
	}
	w := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), words)
	for i := range w {
		w[i] = v
	}
	return nil
}

func (s *emuStream) launch(kernel string, grid, block, smem int, args []uint64, sizes []uint8) error {
	return kernels.Emulate(kernel, grid, block, smem, args, sizes)
}

func (s *emuStream) record(ev event) error { ev.(*emuEvent).at = time.Now(); return nil }

func (s *emuStream) synchronize() error { return nil }

func (e *emuDriver) close() error {
	for p := range e.own {
		e.free(p)
	}
	return nil
}

// emuEvent is the time of its last record.
type emuEvent struct{ at time.Time }

func (e *emuDriver) newEvent(bool) (event, error) { return &emuEvent{}, nil }
func (v *emuEvent) wait() error                   { return nil }
func (v *emuEvent) since(start event) (float64, error) {
	return float64(v.at.Sub(start.(*emuEvent).at)) / 1e6, nil
}
func (v *emuEvent) destroy() {}

// The emulation's launches and copies finish before they return: a copy
// "behind the queued work" is a copy now, and its event is always reached.

func (e *emuDriver) allocHost(bytes int) (unsafe.Pointer, error) {
	p := C.malloc(C.size_t(max(bytes, 1)))
	if p == nil {
		return nil, fmt.Errorf("out of host memory")
	}
	return p, nil
}

func (e *emuDriver) freeHost(p unsafe.Pointer) { C.free(p) }

// The emulation has one order of work: the side stream is the same order,
// and its events are always reached.

func (e *emuDriver) useSideStream(ring int) error { return nil }
func (e *emuDriver) afterDefault() error          { return nil }
func (e *emuDriver) markSide(i int) error         { return nil }
func (e *emuDriver) holdDefault(i int) error      { return nil }
func (e *emuDriver) synchronizeAll() error        { return nil }
func (e *emuDriver) memInfo() (int64, int64, error) {
	return 0, 0, fmt.Errorf("the CPU emulation has no device memory to report")
}

// checkPointers reports a pointer argument of a launch that lies in no
// allocation.
func (e *emuDriver) checkPointers(kernel string, args []any) error {
	for i, a := range args {
		if p, ok := a.(Ptr); ok && p != 0 {
			if _, err := e.view(p, 0, fmt.Sprintf("launch %s argument %d", kernel, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// operand returns the view of one Gemm operand: rows×cols column-major with
// leading dimension ld, batch matrices stride apart.
func (e *emuDriver) operand(m Mat, rows, cols, batch int, what string) ([]byte, error) {
	extent := int64(cols-1)*int64(m.LD) + int64(rows)
	if batch > 1 {
		extent += int64(batch-1) * m.Stride
	}
	return e.view(m.Ptr, extent*m.Type.Size(), "gemm operand "+what)
}

// gemm computes the product as cuBLAS defines it, with float32 sums in
// ascending k and no product fused into a sum.
func (e *emuDriver) gemm(g Gemm) error {
	batch := max(g.Batch, 1)
	ar, ac := g.M, g.K
	if g.TransA {
		ar, ac = g.K, g.M
	}
	br, bc := g.K, g.N
	if g.TransB {
		br, bc = g.N, g.K
	}
	av, err := e.operand(g.A, ar, ac, batch, "A")
	if err != nil {
		return err
	}
	bv, err := e.operand(g.B, br, bc, batch, "B")
	if err != nil {
		return err
	}
	cv, err := e.operand(g.C, g.M, g.N, batch, "C")
	if err != nil {
		return err
	}
	a := unsafe.Slice((*uint16)(unsafe.Pointer(&av[0])), len(av)/2)
	b := unsafe.Slice((*uint16)(unsafe.Pointer(&bv[0])), len(bv)/2)
	var c16 []uint16
	var c32 []float32
	if g.C.Type == F32 {
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
					col[p] = bf16ToFloat32(x)
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
						acc += float32(bf16ToFloat32(x) * col[p])
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
							v += float32(g.Beta * bf16ToFloat32(c16[ci]))
						}
						c16[ci] = bf16FromFloat32(v)
					}
				}
			}
		})
	}
	wg.Wait()
	return nil
}

func bf16ToFloat32(v uint16) float32 { return math.Float32frombits(uint32(v) << 16) }

// bf16FromFloat32 rounds to the nearest BF16, ties to even; a NaN stays a
// quiet NaN with its sign and top payload bits.
func bf16FromFloat32(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}
