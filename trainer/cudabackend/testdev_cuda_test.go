//go:build !gptemu

package cudabackend

import (
	"sync"
	"testing"

	"lcttop/trainer/cudabackend/device"
)

var cudaDev struct {
	once sync.Once
	dev  device.Device
	err  error
}

// testDevice is the GPU, opened once for the whole test binary; the test is
// skipped, saying why, where there is none.
func testDevice(t testing.TB) device.Device {
	t.Helper()
	cudaDev.once.Do(func() { cudaDev.dev, cudaDev.err = device.Open() })
	if cudaDev.err != nil {
		t.Skipf("no CUDA GPU: %v", cudaDev.err)
	}
	return cudaDev.dev
}
