//go:build !cuda

package device

// Open returns ErrNoCUDA: this build has no CUDA support.
func Open() (Device, error) { return nil, ErrNoCUDA }
