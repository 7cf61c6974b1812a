//go:build cuda

package gpu

/*
#cgo LDFLAGS: -ldl
#include "cuinit.h"
*/
import "C"

import "fmt"

// driverInitError is the driver's own cuInit result as an error, nil when it
// succeeded: the wrapper in cuinit.c keeps gorgonia.org/cu's package init
// from ending the process on a machine without a usable GPU.
func driverInitError() error {
	rc := int(C.lct_cuinit_status())
	if rc == 0 {
		return nil
	}
	return fmt.Errorf("no CUDA device: the driver's cuInit failed with %s", cudaResultName(rc))
}

// cudaResultName names the CUresult codes a machine without a GPU produces.
func cudaResultName(rc int) string {
	switch rc {
	case 3:
		return "CUDA_ERROR_NOT_INITIALIZED (3)"
	case 34:
		return "CUDA_ERROR_STUB_LIBRARY (34): the link-time stub, not a driver, was loaded"
	case 35:
		return "CUDA_ERROR_INSUFFICIENT_DRIVER (35): the driver is older than the CUDA version"
	case 100:
		return "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable GPU is visible (check CUDA_VISIBLE_DEVICES)"
	case 500:
		return "CUDA_ERROR_NOT_FOUND (500): the driver library has no cuInit"
	case 999:
		return "CUDA_ERROR_UNKNOWN (999)"
	default:
		return fmt.Sprintf("CUDA error %d", rc)
	}
}
