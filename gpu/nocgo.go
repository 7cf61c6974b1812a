//go:build !cgo

package gpu

import "errors"

// Without cgo, lcttop has neither the NVIDIA libraries (loaded through the C
// dynamic loader) nor the kernels' CPU emulation (C++): whatever asks for a
// GPU gets errNoCgo, and everything else runs on the CPU as usual.
var errNoCgo = errors.New("this lcttop was built without cgo (CGO_ENABLED=0, or no C compiler): it runs on the CPU only; " +
	"for the GPU or its emulation, build it with a C compiler (Debian: apt-get install gcc g++)")

func openCUDADriver(int) (driver, error) { return nil, errNoCgo }

func openEmuDriver() (driver, error) { return nil, errNoCgo }

// emuDriver is never made without cgo; Compute.Launch's check for it finds
// none.
type emuDriver struct{ driver }

func (e *emuDriver) checkPointers(string, []any) error { return nil }

// NVML is the GPU status reader; without cgo there is none to open.
type NVML struct{}

// OpenNVML says that this build has no NVML.
func OpenNVML() (*NVML, error) { return nil, errors.New("no NVML: lcttop built without cgo") }

// Status reports that NVML is not open.
func (n *NVML) Status() DeviceStatus { return DeviceStatus{Err: "NVML not open"} }

// Close does nothing.
func (n *NVML) Close() error { return nil }
