package gpu

import "errors"

// ErrNoCUDA is what the CUDA entry points return in a build without CUDA.
var ErrNoCUDA = errors.New("built without CUDA: rebuild with -tags cuda")
