package cudabackend

import (
	"fmt"

	"lcttop/gpu"
)

// gpuCopyStream is a CopyStream on package gpu's side stream, the one the
// GPU codec queues its work on.
type gpuCopyStream struct{ d *gpu.Device }

// OpenCopyStream returns a CopyStream on d's side stream, beside the
// trainer's stream.
func OpenCopyStream(d *gpu.Device) (CopyStream, error) {
	if err := d.UseSideStream(); err != nil {
		return nil, fmt.Errorf("copy stream: %w", err)
	}
	return gpuCopyStream{d}, nil
}

func (g gpuCopyStream) CopyBeside(dst, src gpu.Ptr, bytes int64, after bool) (uint64, error) {
	if after {
		if err := g.d.AfterDefault(); err != nil {
			return 0, err
		}
	}
	n := int(bytes)
	if err := g.d.CopyBuffer(gpu.External(dst, n), gpu.External(src, n), n); err != nil {
		return 0, err
	}
	return g.d.Point()
}

func (g gpuCopyStream) Hold(point uint64) error { return g.d.HoldDefault(point) }
