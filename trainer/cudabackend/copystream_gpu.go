package cudabackend

import (
	"fmt"

	"lcttop/gpu"
)

// gpuCopyStream is a CopyStream on package gpu's side stream, the one the
// GPU codec queues its work on.
type gpuCopyStream struct{ d *gpu.Device }

// OpenCopyStream returns a CopyStream beside the trainer's stream, and the
// function that releases it once the runs are closed.
func OpenCopyStream() (CopyStream, func() error, error) {
	d, err := gpu.OpenDevice(0)
	if err != nil {
		return nil, nil, fmt.Errorf("copy stream: %w", err)
	}
	if err := d.UseSideStream(); err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("copy stream: %w", err)
	}
	return gpuCopyStream{d}, d.Close, nil
}

func (g gpuCopyStream) CopyBeside(dst, src devPtr, bytes int64, after bool) (uint64, error) {
	if after {
		if err := g.d.AfterDefault(); err != nil {
			return 0, err
		}
	}
	n := int(bytes)
	if err := g.d.CopyBuffer(gpu.External(uintptr(dst), n), gpu.External(uintptr(src), n), n); err != nil {
		return 0, err
	}
	return g.d.Point()
}

func (g gpuCopyStream) Hold(point uint64) error { return g.d.HoldDefault(point) }
