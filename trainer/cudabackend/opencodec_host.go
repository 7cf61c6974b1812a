//go:build !cuda && !kernelemu

package cudabackend

import "fmt"

// OpenCodec returns the LCT run's codec by name. This build has no LCT
// kernels (build tag cuda, or kernelemu for their CPU emulation), so the
// default is "host" (HostCodec) and "gpu" is refused.
func OpenCodec(name string) (Codec, func() error, error) {
	switch name {
	case "", "host":
		return &HostCodec{}, func() error { return nil }, nil
	case "gpu", "gpu-serial":
		return nil, nil, fmt.Errorf("codec %s: built without the LCT kernels: rebuild with -tags cuda (or kernelemu for the CPU emulation)", name)
	}
	return nil, nil, fmt.Errorf("codec %q: want gpu, gpu-serial or host", name)
}

// OpenCopyStream is refused: the side stream is package gpu's, which this
// build lacks (--lct-codec copy-serial copies on the trainer's stream).
func OpenCopyStream() (CopyStream, func() error, error) {
	return nil, nil, fmt.Errorf("copies beside the trainer's stream: built without the LCT kernels: rebuild with -tags cuda (or kernelemu for the CPU emulation), or copy on the trainer's stream")
}
