//go:build unix

package lctfile

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseSequential asks for read-ahead over the whole mapping: a stream
// reads it front to back.
func adviseSequential(all []byte) { _ = unix.Madvise(all, unix.MADV_SEQUENTIAL) }

// dontNeed drops the pages that hold b (a part of all) from the resident
// set; b is widened to whole pages inside all. A read-only file's page that
// a neighbour still reads only faults back in.
func dontNeed(all, b []byte) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(all)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - base
	hi := lo + uintptr(len(b))
	ps := uintptr(pageSize)
	lo = lo / ps * ps
	hi = min((hi+ps-1)/ps*ps, uintptr(len(all)))
	if hi > lo {
		_ = unix.Madvise(all[lo:hi], unix.MADV_DONTNEED)
	}
}
