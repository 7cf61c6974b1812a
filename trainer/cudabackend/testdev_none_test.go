//go:build !cuda && !gptemu

package cudabackend

import (
	"testing"

	"lcttop/trainer/cudabackend/device"
)

// testDevice skips: this build has neither CUDA nor the emulation.
func testDevice(t testing.TB) device.Device {
	t.Helper()
	t.Skip("no device in this build: run with -tags cuda on a GPU machine, or -tags gptemu for the CPU emulation")
	return nil
}
