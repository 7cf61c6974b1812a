package cudabackend

import (
	"fmt"

	"lcttop/gpu"
	"lcttop/gpu/lct"
)

// OpenCodec returns the LCT run's codec on d by name: "gpu" (the default:
// package gpu's kernels on the trainer's device memory, on d's side stream
// beside the trainer's), "gpu-serial" (the same kernels on the trainer's
// stream, between its work) or "host" (the reference codec).
func OpenCodec(name string, d *gpu.Device) (*lct.Codec, error) {
	switch name {
	case "", "gpu", "gpu-serial":
		if name != "gpu-serial" {
			if err := d.UseSideStream(); err != nil {
				return nil, fmt.Errorf("GPU codec: %w", err)
			}
		}
		return lct.New(d), nil
	case "host":
		return lct.NewReference(), nil
	}
	return nil, fmt.Errorf("codec %q: want gpu, gpu-serial or host", name)
}
