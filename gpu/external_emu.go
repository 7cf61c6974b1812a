//go:build kernelemu

package gpu

import "unsafe"

// htodAsync copies at once: the emulation runs every launch to completion.
func (e *emuDriver) htodAsync(dst devPtr, src unsafe.Pointer, bytes int) error {
	return e.htod(dst, src, bytes)
}
