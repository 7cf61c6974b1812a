//go:build gptemu

package cudabackend

import (
	"testing"

	"lcttop/trainer/cudabackend/device"
	"lcttop/trainer/cudabackend/device/emu"
)

// testDevice is the CPU emulation (build tag gptemu), one per test.
func testDevice(t testing.TB) device.Device {
	t.Helper()
	d, err := emu.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
