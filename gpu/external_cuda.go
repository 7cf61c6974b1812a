//go:build cuda

package gpu

import (
	"unsafe"

	"gorgonia.org/cu"
)

// htodAsync queues the copy on the driver's stream, where the kernels run;
// pageable src is staged before the call returns.
func (d *cudaDriver) htodAsync(dst devPtr, src unsafe.Pointer, bytes int) error {
	return cu.MemcpyHtoDAsync(cu.DevicePtr(dst), src, int64(bytes), d.cuStream())
}
