//go:build cuda || kernelemu

package cudabackend

import (
	"fmt"

	"lcttop/gpu"
)

// OpenCodec returns the LCT run's codec by name, "gpu" (the default: package
// gpu's kernels on the trainer's device memory) or "host" (HostCodec, the
// reference), and the function that releases it once the runs are closed.
func OpenCodec(name string) (Codec, func() error, error) {
	switch name {
	case "", "gpu":
		d, err := gpu.OpenDevice(0)
		if err != nil {
			return nil, nil, fmt.Errorf("GPU codec: %w", err)
		}
		return NewGPUCodec(d), d.Close, nil
	case "host":
		return &HostCodec{}, func() error { return nil }, nil
	}
	return nil, nil, fmt.Errorf("codec %q: want gpu or host", name)
}
