package cudabackend

import (
	"strings"
	"testing"

	"lcttop/gpu"
	"lcttop/internal/testgpu"
)

// testGPU is the device, opened once for the whole test binary.
func testGPU(t testing.TB) *gpu.Device { return testgpu.Shared(t) }

// testDevice is testGPU's compute view, what the trainer drives.
func testDevice(t testing.TB) Device { return testGPU(t).Compute() }

// freshGPU opens a device of the test's own (its codec state and side
// stream its own) on the same GPU or emulation, closed when the test ends.
func freshGPU(t testing.TB) *gpu.Device { return testgpu.Fresh(t) }

// emulated reports whether the tests run on the CPU emulation.
func emulated(t testing.TB) bool { return testGPU(t).Emulated() }

// standIn reports whether the tests run through the driver binding on the
// stand-in driver (gpu/internal/fakecuda), whose streams lag each other by
// design: work that only takes time is wasted there.
func standIn(t testing.TB) bool { return strings.HasPrefix(testGPU(t).Name(), "lcttop stand-in") }
