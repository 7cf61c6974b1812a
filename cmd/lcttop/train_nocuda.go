//go:build !cuda && !gptemu

package main

import (
	"context"
	"fmt"
	"io"

	"lcttop/trainer"
	"lcttop/trainer/cudabackend/device"
)

// runCUDA fails in a build without the cuda tag, saying how to rebuild.
func runCUDA(context.Context, io.Writer, trainer.Config, cudaFlags, jsonMode) error {
	return fmt.Errorf("--backend cuda: %w", device.ErrNoCUDA)
}
