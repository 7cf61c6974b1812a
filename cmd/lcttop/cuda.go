package main

import (
	"fmt"

	"lcttop/codec/lctfile"
	"lcttop/gpu"
)

// openCUDA starts the GPU codec; in a build without the cuda tag it fails
// with gpu.ErrNoCUDA, which says how to rebuild.
func openCUDA() (lctfile.Backend, func(), error) {
	c, err := gpu.NewCodec()
	if err != nil {
		return nil, nil, fmt.Errorf("--backend cuda: %w", err)
	}
	return c, func() { _ = c.Close() }, nil
}
