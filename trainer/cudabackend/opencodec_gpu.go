package cudabackend

import (
	"fmt"

	"lcttop/gpu"
)

// OpenCodec returns the LCT run's codec by name, "gpu" (the default:
// package gpu's kernels on the trainer's device memory, on a stream of
// their own beside the trainer's), "gpu-serial" (the same kernels on the
// trainer's stream, between its work) or "host" (HostCodec, the
// reference), and the function that releases it once the runs are closed.
func OpenCodec(name string) (Codec, func() error, error) {
	switch name {
	case "", "gpu", "gpu-serial":
		d, err := gpu.OpenDevice(0)
		if err != nil {
			return nil, nil, fmt.Errorf("GPU codec: %w", err)
		}
		if name != "gpu-serial" {
			if err := d.UseSideStream(); err != nil {
				d.Close()
				return nil, nil, fmt.Errorf("GPU codec: %w", err)
			}
		}
		return NewGPUCodec(d), d.Close, nil
	case "host":
		return &HostCodec{}, func() error { return nil }, nil
	}
	return nil, nil, fmt.Errorf("codec %q: want gpu, gpu-serial or host", name)
}
