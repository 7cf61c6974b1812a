package main

import (
	"fmt"

	"lcttop/codec/lctfile"
	"lcttop/gpu"
)

// openCUDA starts the GPU codec; without a driver or GPU it fails, saying
// which is missing.
func openCUDA() (lctfile.Backend, func(), error) {
	c, err := gpu.NewCodec()
	if err != nil {
		return nil, nil, fmt.Errorf("--backend cuda: %w", err)
	}
	return c, func() { _ = c.Close() }, nil
}
