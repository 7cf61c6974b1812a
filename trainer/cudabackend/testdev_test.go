package cudabackend

import (
	"os"
	"strings"
	"sync"
	"testing"

	"lcttop/gpu"
)

var sharedGPU struct {
	once sync.Once
	dev  *gpu.Device
	err  error
}

// openGPU opens the GPU, or where there is none (or LCTTOP_EMULATE=1) the
// CPU emulation of its kernels; tests on the emulation see the same device
// kind throughout a test binary.
func openGPU() (*gpu.Device, error) {
	if os.Getenv("LCTTOP_EMULATE") != "1" {
		if d, err := gpu.OpenDevice(0); err == nil || os.Getenv(gpu.RequireEnv) == "1" {
			return d, err
		}
	}
	return gpu.OpenEmulated()
}

// testGPU is the device, opened once for the whole test binary.
func testGPU(t testing.TB) *gpu.Device {
	t.Helper()
	sharedGPU.once.Do(func() { sharedGPU.dev, sharedGPU.err = openGPU() })
	if sharedGPU.err != nil {
		t.Fatal(sharedGPU.err)
	}
	return sharedGPU.dev
}

// testDevice is testGPU's compute view, what the trainer drives.
func testDevice(t testing.TB) Device { return testGPU(t).Compute() }

// freshGPU opens a device of the test's own (its codec state and side
// stream its own) on the same GPU or emulation, closed when the test ends.
func freshGPU(t testing.TB) *gpu.Device {
	t.Helper()
	open := gpu.OpenEmulated
	if !testGPU(t).Emulated() {
		open = func() (*gpu.Device, error) { return gpu.OpenDevice(0) }
	}
	d, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// emulated reports whether the tests run on the CPU emulation.
func emulated(t testing.TB) bool { return testGPU(t).Emulated() }

// standIn reports whether the tests run through the driver binding on the
// stand-in driver (gpu/internal/fakecuda), whose streams lag each other by
// design: work that only takes time is wasted there.
func standIn(t testing.TB) bool { return strings.HasPrefix(testGPU(t).Name(), "lcttop stand-in") }
