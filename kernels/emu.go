//go:build cgo

package kernels

/*
#cgo CXXFLAGS: -std=c++20 -O2 -fno-strict-aliasing -Wno-unused-function
#cgo LDFLAGS: -lstdc++
#include <stdint.h>
#include <stdlib.h>
int kernels_emu_has(const char* name);
void kernels_emu_set_lazy_prefix(int period);
int kernels_emu_launch(const char* name, unsigned grid, unsigned block, unsigned smem, const uint64_t* slots,
                       const uint8_t* sizes, int n, char* err, int errLen);
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Emulated reports whether the CPU emulation has kernel name.
func Emulated(name string) bool {
	c := C.CString(name)
	defer C.free(unsafe.Pointer(c))
	return C.kernels_emu_has(c) != 0
}

// Emulate runs kernel name of lct.cu or gpt.cu on the CPU to completion: a
// 1-D grid of grid CTAs of block threads with smem bytes of dynamic shared
// memory. args holds each parameter in the low bytes of 8, as cuLaunchKernel
// takes them; sizes, when not nil, gives each parameter's size, which the
// emulation checks against the kernel's. Pointers are host addresses.
// Launches run one at a time.
func Emulate(name string, grid, block, smem int, args []uint64, sizes []uint8) error {
	if grid < 0 || block < 1 || block > 1024 || smem < 0 {
		return fmt.Errorf("emulated launch of %s: grid %d, block %d, %d bytes of shared memory", name, grid, block, smem)
	}
	if sizes != nil && len(sizes) != len(args) {
		return fmt.Errorf("emulated launch of %s: %d sizes for %d arguments", name, len(sizes), len(args))
	}
	c := C.CString(name)
	defer C.free(unsafe.Pointer(c))
	var msg [256]C.char
	var ps *C.uint64_t
	var pz *C.uint8_t
	if len(args) > 0 {
		ps = (*C.uint64_t)(unsafe.Pointer(&args[0]))
	}
	if len(sizes) > 0 {
		pz = (*C.uint8_t)(unsafe.Pointer(&sizes[0]))
	}
	if C.kernels_emu_launch(c, C.uint(grid), C.uint(block), C.uint(smem), ps, pz, C.int(len(args)), &msg[0], C.int(len(msg))) != 0 {
		return fmt.Errorf("emulated launch of %s: %s", name, C.GoString(&msg[0]))
	}
	return nil
}

// SetEmulatedLazyPrefix makes only every period-th block of an emulated
// encode publish its inclusive prefix (lct.cu, LCT_LAZY_PREFIX), so that the
// look-back of the blocks after the others adds aggregates over several
// windows, as on a GPU where blocks still look back when their successors
// do; 0 restores the normal protocol. For tests.
func SetEmulatedLazyPrefix(period int) { C.kernels_emu_set_lazy_prefix(C.int(period)) }
