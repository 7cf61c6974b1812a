package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile writes the process's CPU profile to path until the
// returned stop is called. The file is new: an existing one is not
// replaced (a profile is a measurement's output, never an input).
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("--cpu-profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "lcttop: --cpu-profile %s: %v\n", path, err)
		}
	}, nil
}
