//go:build unix

package filesource

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

var pageSize = os.Getpagesize()

// adviseRandom turns off read-ahead for the whole mapping: samples touch
// scattered pages, and the exact pass releases what it has read.
func adviseRandom(all []byte) { _ = unix.Madvise(all, unix.MADV_RANDOM) }

// willNeed starts reading the pages that hold b (a part of all) into the
// page cache, so that many reads are in flight at once on a cold file.
func willNeed(all, b []byte) { advise(all, b, unix.MADV_WILLNEED) }

// dontNeed drops the pages that hold b (a part of all) from the resident
// set; b is widened to whole pages inside all.
func dontNeed(all, b []byte) { advise(all, b, unix.MADV_DONTNEED) }

func advise(all, b []byte, advice int) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(all)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - base
	hi := lo + uintptr(len(b))
	ps := uintptr(pageSize)
	lo = lo / ps * ps
	hi = min((hi+ps-1)/ps*ps, uintptr(len(all)))
	if hi > lo {
		_ = unix.Madvise(all[lo:hi], advice)
	}
}
